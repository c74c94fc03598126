"""Each large namespace's document chunks have an HNSW index of their own (migration
0027, which also gives priming its indexes), as its memories do: a walk reads one
namespace's chunks, look-alike namespaces ("alice", "alice2", "alic") included, and
forgetting a namespace drops its index."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.operations.ann import namespace_index
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from tasks.ann_index import refresh_ann_index
from tasks.documents import Chunking, IngestRequest, ingest_documents
from tasks.files import open_memory_root
from tasks.privacy import forget
from tasks.reembed import reembed
from tests.storage.memory_factory import put
from tests.storage.schema_steps import migrate
from tests.tasks.aging.helpers import local_cold

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DOCS = SearchOptions(kinds=["doc"])
LOOK_ALIKES = ("alice", "alice2", "alic")  # "Alice": refused by the input gate
CHUNK_INDEXES = text(
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'document_chunks' "
    "AND indexname LIKE 'ix\\_document\\_chunks\\_hnsw%' ORDER BY 1"
)


def _fill(store: Store, folder: Path) -> None:
    """Each look-alike namespace: a guide of 40 sections (a chunk each), the same topics in
    words of its own, and a few memories."""
    embedder = HashingEmbedder(store.settings.embedding.dim)
    for ns in LOOK_ALIKES:
        docs = folder / ns
        docs.mkdir(parents=True)
        sections = [
            f"## Bed {i}\n\nThe {ns} garden bed {i} gets compost mix {ns}-{i % 7} "
            f"and water twice a week; the {ns} tomatoes grow there."
            for i in range(40)
        ]
        (docs / "guide.md").write_text(f"# Guide of {ns}\n\n" + "\n\n".join(sections))
        request = IngestRequest(ns, [str(docs)], Chunking(200, 0), max_bytes=1 << 20, at=NOW)
        assert ingest_documents(store.engine, embedder, request).added == 1
        put(store, ns, [f"{ns} noted the garden beds" for _ in range(3)], NOW)
    flagged = refresh_ann_index(store.engine, min_rows=30)
    assert set(flagged) == set(LOOK_ALIKES) and min(flagged.values()) >= 40


def _indexes(store: Store) -> dict[str, str]:
    with store.engine.connect() as conn:
        return {str(name): str(definition) for name, definition in conn.execute(CHUNK_INDEXES)}


def _priming_indexes(store: Store) -> set[str]:
    """Priming's indexes of migration 0027, or the one it replaces."""
    names = ("ix_episodes_namespace", "ix_episodes_namespace_ended", "ix_memories_top_facts")
    with store.engine.connect() as conn:
        found = conn.execute(
            text("SELECT indexname FROM pg_indexes WHERE indexname = ANY(:names)"),
            {"names": list(names)},
        )
        return {str(name) for name in found.scalars()}


def _retriever(store: Store) -> Retriever:
    settings = RetrievalSettings(min_cosine=-1.0)
    return Retriever(store.engine, HashingEmbedder(384), settings, store.settings.tz)


def test_each_large_namespace_walks_a_chunk_index_of_its_own(store: Store, tmp_path: Path):
    _fill(store, tmp_path)
    own = {ns: namespace_index(ns, "document_chunks") for ns in LOOK_ALIKES}

    indexes = _indexes(store)
    assert set(indexes) == set(own.values())  # no shared index left
    r = _retriever(store)
    for ns in LOOK_ALIKES:
        assert f"(namespace)::text = '{ns}'::text" in indexes[own[ns]]
        plan = r.explain_plan(ns, "garden bed compost")
        assert own[ns] in plan
        assert not [other for other in LOOK_ALIKES if other != ns and own[other] in plan]
        hits = r.search(ns, "garden bed compost tomatoes", limit=20, options=DOCS, as_of=NOW)
        assert len(hits) == 20
        assert {h.namespace for h in hits} == {ns}
        assert all(f"The {ns} garden" in h.content for h in hits)


def test_forgetting_a_namespace_drops_its_chunk_index(store: Store, tmp_path: Path):
    _fill(store, tmp_path / "docs")
    forget(
        store.engine, local_cold(tmp_path), open_memory_root(store.settings), "alice", actor="test"
    )
    assert set(_indexes(store)) == {
        namespace_index(ns, "document_chunks") for ns in ("alice2", "alic")
    }
    hits = _retriever(store).search("alice2", "garden bed", options=DOCS, as_of=NOW)
    assert hits and {h.namespace for h in hits} == {"alice2"}


def test_migration_0027_gives_each_namespace_its_chunk_index_and_back(store: Store, tmp_path: Path):
    _fill(store, tmp_path)
    r = _retriever(store)
    before = [h.ref for h in r.search("alice2", "compost mix", options=DOCS, as_of=NOW)]

    migrate(store, "0026")
    shared = _indexes(store)
    assert list(shared) == ["ix_document_chunks_hnsw"]
    assert _priming_indexes(store) == {"ix_episodes_namespace"}
    assert shared["ix_document_chunks_hnsw"].endswith("WHERE ann_indexed")

    migrate(store, "head")
    assert set(_indexes(store)) == {namespace_index(ns, "document_chunks") for ns in LOOK_ALIKES}
    assert _priming_indexes(store) == {"ix_episodes_namespace_ended", "ix_memories_top_facts"}
    after = [h.ref for h in r.search("alice2", "compost mix", options=DOCS, as_of=NOW)]
    assert after == before


def test_reembedding_rebuilds_each_namespace_chunk_index(store: Store, tmp_path: Path):
    _fill(store, tmp_path)
    new = HashingEmbedder(128)
    assert reembed(store.engine, new, batch=100).swapped

    assert set(_indexes(store)) == {namespace_index(ns, "document_chunks") for ns in LOOK_ALIKES}
    r = Retriever(store.engine, new, RetrievalSettings(min_cosine=-1.0), store.settings.tz)
    plan = r.explain_plan("alice2", "garden bed compost")
    assert namespace_index("alice2", "document_chunks") in plan
    hits = r.search("alice2", "garden bed compost", limit=10, options=DOCS, as_of=NOW)
    assert len(hits) == 10 and {h.namespace for h in hits} == {"alice2"}
