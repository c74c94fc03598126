"""Searches' accesses written in batches (``serving._accesses``, migration 0030): each
search checked against its key and namespace, nothing written twice, what waits written
when the server stops, and a batch the store refuses kept within its bound."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from serving import Accesses
from storage.kernel.settings import Settings
from storage.keys import create_key, key_hash, revoke_key
from storage.operations.access import SearchAccess, record_searches
from storage.server.engine import Store
from storage.server.scoped import open_serving_engine
from tests.serving.conftest import Served
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
LOG = text("SELECT namespace, context, memory_ids FROM memory_access_log ORDER BY id")
PENDING = text("SELECT memory_id, namespace, hits, last_accessed_at FROM memory_access_pending")


def _key(store: Store, namespace: str) -> str:
    with Session(store.engine) as session, session.begin():
        return key_hash(create_key(session, namespace)[1])


def _read(store: Store) -> tuple[list[tuple[object, ...]], set[tuple[object, ...]]]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(LOG)], {tuple(r) for r in conn.execute(PENDING)}


def test_a_batch_counts_each_search_under_its_own_key_and_namespace_only(
    settings: Settings, store: Store
) -> None:
    mine, gone = put(store, "acc", ["the plumber comes on Monday", "the bins go out"], AT)
    (theirs,) = put(store, "acc2", ["the plumber comes on Monday"], AT)
    key, revoked = _key(store, "acc"), _key(store, "acc")
    with Session(store.engine) as session, session.begin():
        (revoked_id,) = session.execute(
            text("SELECT id FROM api_keys WHERE key_hash = :h"), {"h": revoked}
        ).scalars()
        revoke_key(session, revoked_id, AT)
        # forgotten between its search and the batch: no row may name it afterwards
        session.execute(text("DELETE FROM memories WHERE id = :id"), {"id": gone})
    later = AT + timedelta(minutes=1)
    searches = [
        SearchAccess(key, "acc", "search: plumber", AT, (mine, theirs)),  # theirs: acc2's
        SearchAccess(key, "acc2", "search: look-alike", AT, (theirs,)),  # acc's key, acc2
        SearchAccess(revoked, "acc", "search: revoked", AT, (mine,)),
        SearchAccess(key, "acc", "search: bins", later, (gone, mine)),
        SearchAccess(key, "acc", "search: only the forgotten", later, (gone,)),
    ]
    serving = open_serving_engine(settings)  # as the serving role, which may call it
    with serving.begin() as conn:
        assert record_searches(conn, searches) == 2
    logged, pending = _read(store)
    assert logged == [("acc", "search: plumber", [mine]), ("acc", "search: bins", [mine])]
    assert pending == {(mine, "acc", 2, later)}


def test_accesses_wait_for_their_batch_and_a_stop_writes_them(
    served_batched: Served,
) -> None:
    served = served_batched
    (mine,) = put(served.store, "wait", ["the ferry leaves at nine"], AT)
    put(served.store, "wait2", ["the ferry leaves at nine"], AT)
    with served.client(served.key("wait")) as client:
        for _ in range(2):
            reply = client.post("/v1/namespaces/wait/search", json={"query": "ferry"})
            assert reply.status_code == 200 and len(reply.json()["hits"]) == 1
    assert _read(served.store) == ([], set())  # the batch is a minute away
    served.process.send_signal(signal.SIGTERM)
    served.process.wait(timeout=30)  # uvicorn's exit status is the signal's (143)
    assert "Application shutdown complete" in served.log.read_text()
    logged, pending = _read(served.store)
    assert logged == [("wait", "search: ferry", [mine])] * 2
    assert {(m, ns, hits) for m, ns, hits, _ in pending} == {(mine, "wait", 2)}


def test_a_refused_batch_is_kept_for_the_next_within_its_bound(
    settings: Settings, store: Store
) -> None:
    (mine,) = put(store, "kept", ["the ferry leaves at nine"], AT)
    key = _key(store, "kept")
    assert settings.database_url is not None
    url = make_url(settings.database_url.get_secret_value())
    gone = create_engine(url.set(database=f"{url.database}_gone"))  # refuses to connect
    accesses = Accesses(gone, every=0, most=2)
    for n in range(3):
        accesses.add(SearchAccess(key, "kept", f"search: {n}", AT, (mine,)))
    assert accesses.dropped == 1  # the oldest, past the bound of 2
    accesses.engine = store.engine
    assert accesses.flush() == 2
    logged, pending = _read(store)
    assert [context for _, context, _ in logged] == ["search: 1", "search: 2"]
    assert {(m, hits) for m, _, hits, _ in pending} == {(mine, 2)}
    gone.dispose()
