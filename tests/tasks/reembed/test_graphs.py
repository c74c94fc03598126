"""The local model's graphs (float32, int8, int8-static): the store records which made
its vectors, ``store_encoder=auto`` keeps it, and ``reembed`` moves the store between
them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import LocalEmbedder, default_cache_dir
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import EmbeddingSettings, Settings
from storage.meta import check_compatible, read_facts
from storage.retrieval import Retriever
from storage.server.connect import checked_embedder, connect
from storage.server.engine import Store
from storage.server.scoped import open_serving_engine
from tasks.reembed import reembed
from tests.helpers import add_session, chat, run_sync

AS_OF = datetime(2026, 11, 20, 23, tzinfo=UTC)
FLOAT32, INT8 = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2/int8"
STATIC = "all-MiniLM-L6-v2/int8-static"


@pytest.fixture(scope="module")
def graphs() -> dict[str, LocalEmbedder]:
    cache = default_cache_dir()  # the graphs the machine keeps, as the store's embedder loads them
    return {
        FLOAT32: LocalEmbedder(threads=2, batch_tokens=256, cache_dir=cache),
        INT8: LocalEmbedder(threads=2, cache_dir=cache, graph="int8"),
        STATIC: LocalEmbedder(threads=2, cache_dir=cache, graph="int8-static"),
    }


def local(store: Store, encoder: str = "auto") -> Settings:
    embedding = EmbeddingSettings(provider="local", store_encoder=encoder)
    return store.settings.model_copy(update={"embedding": embedding})


def stored(store: Store) -> list[tuple[str, str, np.ndarray]]:
    with Session(store.engine) as session:
        rows = session.execute(text("SELECT content, embedding_model, embedding FROM memories"))
        return [(r.content, r.embedding_model, r.embedding.to_numpy()) for r in rows]


def assert_made_by(store: Store, embedder: LocalEmbedder) -> None:
    rows = stored(store)
    assert rows and {model for _, model, _ in rows} == {embedder.name}
    expected = embedder.embed([content for content, _, _ in rows])
    np.testing.assert_allclose(np.stack([v for _, _, v in rows]), expected, atol=1e-5)
    with Session(store.engine) as session:
        assert read_facts(session)["embedding_model"] == embedder.name


def test_reembed_moves_the_store_between_the_graphs_and_auto_follows(
    store: Store, graphs: dict[str, LocalEmbedder]
) -> None:
    start = AS_OF - timedelta(hours=5)
    add_session(store, "s1", "alice", chat(start, "Should I buy new shoes for the race?", "Yes."))
    add_session(store, "s2", "alice", chat(start, "We booked four nights in Copenhagen.", "Ok."))
    with Session(store.engine) as session, session.begin():
        check_compatible(session, graphs[FLOAT32])  # the empty store takes float32
    run_sync(store, AS_OF, embedder=graphs[FLOAT32], min_user_messages=1)
    assert_made_by(store, graphs[FLOAT32])

    # auto keeps the graph the store holds; naming the other is refused until reembed.
    assert connect(local(store))[1].name == FLOAT32
    # So does the serving role, which sees no row without a key's scope: the recorded graph.
    serving = open_serving_engine(local(store))
    assert checked_embedder(serving, local(store)).name == FLOAT32
    with pytest.raises(ConfigurationError, match=f"{FLOAT32} .*{INT8}.*archivist reembed"):
        connect(local(store, "int8"))

    out = reembed(store.engine, graphs[INT8], batch=3)

    assert out.swapped and out.model == INT8
    assert_made_by(store, graphs[INT8])
    store_now, embedder = connect(local(store))
    assert embedder.name == INT8  # auto follows the store
    hits = Retriever(store_now.engine, embedder).search(
        "alice", "what footwear should I get for running", as_of=AS_OF, record_access=False
    )
    assert hits and "new shoes for the race" in hits[0].content

    back = reembed(store.engine, graphs[FLOAT32], batch=3)

    assert back.swapped
    assert_made_by(store, graphs[FLOAT32])
    assert reembed(store.engine, graphs[FLOAT32]).already_current


def test_a_store_of_the_int8_graph_keeps_it_until_reembed_moves_it_to_the_static_one(
    store: Store, graphs: dict[str, LocalEmbedder]
) -> None:
    start = AS_OF - timedelta(hours=5)
    add_session(store, "s1", "alice", chat(start, "Should I buy new shoes for the race?", "Yes."))
    add_session(store, "s2", "bob", chat(start, "We booked four nights in Copenhagen.", "Ok."))
    with Session(store.engine) as session, session.begin():
        check_compatible(session, graphs[INT8])  # a store made before int8-static
    run_sync(store, AS_OF, embedder=graphs[INT8], min_user_messages=1)
    assert_made_by(store, graphs[INT8])
    assert connect(local(store))[1].name == INT8  # auto keeps it
    with pytest.raises(ConfigurationError, match=f"{INT8} .*{STATIC}.*archivist reembed"):
        connect(local(store, "int8-static"))

    out = reembed(store.engine, graphs[STATIC], batch=3)

    assert out.swapped and out.model == STATIC
    assert_made_by(store, graphs[STATIC])
    assert connect(local(store))[1].name == STATIC  # auto follows the store
    assert reembed(store.engine, graphs[STATIC]).already_current
    assert reembed(store.engine, graphs[INT8], batch=2).swapped  # and back
    assert_made_by(store, graphs[INT8])


def test_a_new_store_takes_the_static_int8_graph(store: Store) -> None:
    _, embedder = connect(local(store))
    assert embedder.name == STATIC
    with Session(store.engine) as session:
        assert read_facts(session)["embedding_model"] == STATIC
    assert connect(local(store, "float32"))[1].name == FLOAT32  # still empty: adopts it
