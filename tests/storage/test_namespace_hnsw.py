"""Each large namespace's memories have an HNSW index of their own (migration 0019): a walk
reads one namespace's graph, look-alike namespaces included, and forgetting a namespace
drops its index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.operations.ann import namespace_index
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.ann_index import refresh_ann_index
from tasks.files import open_memory_root
from tasks.privacy import forget
from tests.storage.memory_factory import put
from tests.storage.schema_steps import migrate
from tests.tasks.aging.helpers import local_cold

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
OWN = text(
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
    "AND indexname LIKE 'ix\\_memories\\_hnsw%' ORDER BY 1"
)


def _fill(store: Store) -> None:
    old = NOW - timedelta(days=3)
    put(store, "big", [f"note {i} about atlas budget item {i % 37}" for i in range(1100)], old)
    put(store, "big2", [f"note {i} about atlas ledger line {i % 29}" for i in range(1050)], old)
    put(store, "small", [f"small note {i} about atlas" for i in range(12)], NOW)
    assert refresh_ann_index(store.engine, min_rows=1000) == {"big": 1100, "big2": 1050}


def _indexes(store: Store) -> dict[str, str]:
    with store.engine.connect() as conn:
        return {str(name): str(definition) for name, definition in conn.execute(OWN)}


def _retriever(store: Store) -> Retriever:
    settings = RetrievalSettings(min_cosine=-1.0)
    return Retriever(store.engine, HashingEmbedder(384), settings, store.settings.tz)


def test_each_large_namespace_walks_an_index_of_its_own(store: Store) -> None:
    _fill(store)
    big, big2 = namespace_index("big"), namespace_index("big2")

    indexes = _indexes(store)
    assert set(indexes) == {big, big2}
    assert "(namespace)::text = 'big'::text" in indexes[big]
    assert "(namespace)::text = 'big2'::text" in indexes[big2]
    r = _retriever(store)
    plan = r.explain_plan("big", "atlas ledger")
    assert big in plan and big2 not in plan
    plan = r.explain_plan("big2", "atlas budget")
    assert big2 in plan and big not in plan
    assert "hnsw" not in r.explain_plan("small", "atlas")
    hits = r.search("big", "atlas ledger line", limit=10, as_of=NOW, record_access=False)
    assert len(hits) == 10 and {h.namespace for h in hits} == {"big"}


def test_forgetting_a_namespace_drops_its_index(store: Store, tmp_path: Path) -> None:
    _fill(store)
    root = open_memory_root(store.settings)
    forget(store.engine, local_cold(tmp_path), root, "big", actor="test")
    assert set(_indexes(store)) == {namespace_index("big2")}
    hits = _retriever(store).search("big2", "atlas ledger", as_of=NOW, record_access=False)
    assert len(hits) == 10


def test_migration_0019_gives_each_indexed_namespace_its_index_and_back(store: Store) -> None:
    _fill(store)
    r = _retriever(store)
    before = [h.memory_id for h in r.search("big2", "atlas ledger line 7", as_of=NOW)]

    migrate(store, "0018")
    shared = _indexes(store)
    assert list(shared) == ["ix_memories_hnsw"]
    assert shared["ix_memories_hnsw"].endswith("WHERE ann_indexed")

    migrate(store, "head")
    assert set(_indexes(store)) == {namespace_index("big"), namespace_index("big2")}
    assert [h.memory_id for h in r.search("big2", "atlas ledger line 7", as_of=NOW)] == before
