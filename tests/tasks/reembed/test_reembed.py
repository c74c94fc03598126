"""``archivist reembed``: a store moves to another model (and dimension) whole, resumably."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.errors import ConfigurationError
from storage.kernel.shards import Scope
from storage.meta import check_compatible, read_facts
from storage.operations.ann import namespace_index
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from tasks.aging import archive_old
from tasks.ann_index import refresh_ann_index
from tasks.privacy import restore
from tasks.reembed import reembed
from tests.child import PausedChild
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import local_cold

AS_OF = datetime(2026, 11, 20, 12, tzinfo=UTC)
NEW = HashingEmbedder(128)


class Renamed:
    """The hashing embedder under another model's name: same size, other model."""

    name = "another-model"
    dim = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return HashingEmbedder(384).embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return HashingEmbedder(384).embed_query(text)


def texts(n: int, word: str) -> list[str]:
    return [f"{word} note {i}: the {word} plan for day {i}" for i in range(n)]


def vectors(store: Store) -> dict[int, tuple[str, str, np.ndarray]]:
    with Session(store.engine) as session:
        rows = session.execute(text("SELECT id, content, embedding_model, embedding FROM memories"))
        return {r.id: (r.content, r.embedding_model, r.embedding.to_numpy()) for r in rows}


def assert_all_from(store: Store, embedder: HashingEmbedder) -> None:
    found = vectors(store)
    assert found
    for content, model, vector in found.values():
        assert model == embedder.name
        assert np.allclose(vector, embedder.embed([content])[0], atol=1e-6)


def test_reembed_moves_every_memory_to_the_new_model_and_dimension(store: Store) -> None:
    put(store, "alice", texts(30, "garden"), AS_OF - timedelta(days=3))
    put(store, "bob", texts(20, "budget"), AS_OF - timedelta(days=1), kind="long_term")
    with Session(store.engine) as session, pytest.raises(ConfigurationError, match="reembed"):
        check_compatible(session, NEW)

    out = reembed(store.engine, NEW, batch=7)

    assert (out.embedded, out.swapped, out.pending) == (50, True, 0)
    assert_all_from(store, NEW)
    with Session(store.engine) as session:
        check_compatible(session, NEW)  # the store now takes the new model
        assert read_facts(session)["embedding_dim"] == "128"
        with pytest.raises(ConfigurationError, match="384"):
            check_compatible(session, HashingEmbedder(384))
    hits = Retriever(store.engine, NEW).search("alice", "garden plan day 4", as_of=AS_OF)
    assert hits and hits[0].content == "garden note 4: the garden plan for day 4"
    assert reembed(store.engine, NEW).already_current


def test_a_large_namespace_walks_an_index_of_its_own_vectors_after_the_swap(store: Store) -> None:
    put(store, "alice", texts(120, "garden"), AS_OF - timedelta(days=3))
    assert refresh_ann_index(store.engine, min_rows=100) == {"alice": 120}

    assert reembed(store.engine, NEW, batch=50).swapped

    with Session(store.engine) as session:
        own = session.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = :name"),
            {"name": namespace_index("alice")},
        ).scalar_one()
    assert "WHERE (ann_indexed AND ((namespace)::text = 'alice'::text))" in own
    r = Retriever(store.engine, NEW)
    assert namespace_index("alice") in r.explain_plan("alice", "garden plan day 4")
    hits = r.search("alice", "garden plan day 4", as_of=AS_OF, record_access=False)
    assert hits and hits[0].content == "garden note 4: the garden plan for day 4"


def test_a_model_of_the_same_size_is_refused_until_reembedded(store: Store) -> None:
    put(store, "alice", texts(3, "garden"), AS_OF)
    with Session(store.engine) as session, pytest.raises(ConfigurationError) as caught:
        check_compatible(session, Renamed())
    assert "hashing-v1-384" in str(caught.value) and "archivist reembed" in str(caught.value)

    assert reembed(store.engine, Renamed()).swapped
    with Session(store.engine) as session:
        check_compatible(session, Renamed())
        assert read_facts(session)["embedding_model"] == "another-model"


def test_an_empty_store_takes_the_configured_model(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        check_compatible(session, Renamed())
    with Session(store.engine) as session:
        assert read_facts(session)["embedding_model"] == "another-model"


def test_one_namespace_at_a_time_swaps_only_when_all_are_done(store: Store) -> None:
    put(store, "alice", texts(12, "garden"), AS_OF)
    put(store, "bob", texts(5, "budget"), AS_OF)

    first = reembed(store.engine, NEW, namespace="alice", batch=5)
    assert (first.embedded, first.swapped, first.pending) == (12, False, 5)
    with Session(store.engine) as session, pytest.raises(ConfigurationError, match="under way"):
        check_compatible(session, NEW)
    old = Retriever(store.engine, HashingEmbedder(384)).search("bob", "budget plan", as_of=AS_OF)
    assert old  # searches keep the old vectors meanwhile

    second = reembed(store.engine, NEW)
    assert (second.resumed, second.embedded, second.swapped) == (True, 5, True)
    assert_all_from(store, NEW)


def test_a_run_under_way_for_other_turn_texts_starts_over(store: Store) -> None:
    put(store, "alice", texts(12, "garden"), AS_OF, kind="turn", session_id="s1")
    put(store, "bob", texts(5, "budget"), AS_OF)
    first = reembed(store.engine, NEW, namespace="alice", turn_context=True)
    assert (first.embedded, first.swapped) == (12, False)

    # Resumed with the same texts: only bob's rows are left; with the other texts: all.
    out = reembed(store.engine, NEW)

    assert (out.resumed, out.embedded, out.swapped) == (False, 17, True)
    assert_all_from(store, NEW)
    assert read_facts_of(store)["embedding_turn_context"] == "off"


def read_facts_of(store: Store) -> dict[str, str]:
    with Session(store.engine) as session:
        return read_facts(session)


KILLABLE_REEMBED = """
import sys
from storage.kernel.settings import Settings
from storage.embedding import HashingEmbedder
from storage.server.engine import open_store
from tasks.reembed import reembed

store = open_store(Settings(database_url=sys.argv[1], data_dir=sys.argv[2]))

def progress(done, total):
    if done == 30:
        print("paused", flush=True)
        sys.stdin.readline()

reembed(store.engine, HashingEmbedder(128), batch=10, on_progress=progress)
"""


def test_a_killed_reembed_resumes_without_redoing_finished_batches(
    store: Store, tmp_path: Path
) -> None:
    put(store, "alice", texts(95, "garden"), AS_OF)
    assert store.settings.database_url is not None
    url = store.settings.database_url.get_secret_value()
    with PausedChild(KILLABLE_REEMBED, url, str(tmp_path / "child")) as child:
        assert child.first_line == "paused\n"
        child.kill()
    with Session(store.engine) as session:
        done = session.scalar(
            text("SELECT count(*) FROM memories WHERE embedding_next IS NOT NULL")
        )
    assert done == 30  # three committed batches survive the kill

    out = reembed(store.engine, NEW, batch=10)

    assert (out.resumed, out.embedded, out.swapped) == (True, 65, True)  # 30 + 65 = 95: none twice
    assert_all_from(store, NEW)


def test_a_restored_memory_of_the_old_model_comes_back_re_embedded(
    store: Store, tmp_path: Path
) -> None:
    (old,) = put(
        store, "alice", ["the garden shed key is under the blue pot"], AS_OF - timedelta(days=900)
    )
    put(store, "alice", texts(3, "garden"), AS_OF)
    cold = local_cold(tmp_path)
    archive_old(store.engine, cold, AS_OF - timedelta(days=365), 1000, Scope())
    reembed(store.engine, NEW)

    found = Retriever(store.engine, NEW).search(
        "alice", "blue pot shed key", as_of=AS_OF, options=SearchOptions(include_archived=True)
    )
    assert found[0].memory_id == old and found[0].factors["cosine"] == 0.0  # words alone

    assert restore(store.engine, cold, old, NEW, actor="test") == 1
    content, model, vector = vectors(store)[old]
    assert model == NEW.name and np.allclose(vector, NEW.embed([content])[0], atol=1e-6)


def test_reembed_moves_document_chunks_with_the_memories(store: Store, tmp_path: Path) -> None:
    from tests.tasks.documents.test_ingest import ingest, write_samples

    put(store, "alice", texts(5, "garden"), AS_OF - timedelta(days=3))
    write_samples(tmp_path / "kb")
    ingest(store, str(tmp_path / "kb"), ns="alice")
    with store.engine.connect() as conn:
        chunks = conn.execute(text("SELECT count(*) FROM document_chunks")).scalar_one()

    out = reembed(store.engine, NEW, batch=3)

    assert (out.embedded, out.swapped) == (5 + chunks, True)
    with store.engine.connect() as conn:
        dims = conn.execute(
            text("SELECT DISTINCT vector_dims(embedding), embedding_model FROM document_chunks")
        ).all()
    assert [tuple(d) for d in dims] == [(128, NEW.name)]
    with store.engine.connect() as conn:  # vectors stay in the row (migration 0017)
        storage = conn.execute(
            text(
                "SELECT attstorage FROM pg_attribute "
                "WHERE attrelid = 'document_chunks'::regclass AND attname = 'embedding'"
            )
        ).scalar_one()
    assert storage == "m"
    hits = Retriever(store.engine, NEW).search("alice", "oil the bicycle chain", as_of=AS_OF)
    assert hits[0].doc is not None and "Oil the chain" in hits[0].content


def test_a_store_with_document_chunks_only_is_not_empty(store: Store, tmp_path: Path) -> None:
    from tests.tasks.documents.test_ingest import ingest, write_samples

    write_samples(tmp_path / "kb")
    ingest(store, str(tmp_path / "kb"))
    with Session(store.engine) as session, pytest.raises(ConfigurationError, match="reembed"):
        check_compatible(session, Renamed())
