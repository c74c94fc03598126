"""Pending accesses: a fold moves them into their memories, one namespace or shard at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.shards import Shard, shard_number
from storage.operations.access import fold_accesses
from storage.server.engine import Store
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
PENDING = text(
    "INSERT INTO memory_access_pending (memory_id, namespace, hits, last_accessed_at) "
    "VALUES (:id, :ns, :hits, :at)"
)


def _counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT namespace, access_count FROM memories"))
        return dict(rows.tuples().all())


def test_a_fold_of_one_shard_leaves_the_other_shards_pending(store: Store) -> None:
    names = ["ns-a", "ns-b", "ns-c", "ns-d", "ns-e"]
    one, other = (next(n for n in names if shard_number(n, 2) == i) for i in (1, 2))
    ids = {ns: put(store, ns, [f"a memory of {ns}"], AT)[0] for ns in (one, other)}
    with Session(store.engine) as session, session.begin():
        for ns, mid in ids.items():
            session.execute(PENDING, {"id": mid, "ns": ns, "hits": 3, "at": AT})

    with Session(store.engine) as session, session.begin():
        first = fold_accesses(session, shard=Shard(1, 2))
    assert (first.rows, first.memories, first.accesses) == (1, 1, 3)
    assert _counts(store) == {one: 3, other: 0}

    with Session(store.engine) as session, session.begin():
        session.execute(PENDING, {"id": ids[one], "ns": one, "hits": 2, "at": AT + timedelta(1)})
        rest = fold_accesses(session)
    assert (rest.rows, rest.memories, rest.accesses) == (2, 2, 5)
    assert _counts(store) == {one: 5, other: 3}
    with store.engine.connect() as conn:
        touched = conn.execute(
            text("SELECT last_accessed_at FROM memories WHERE id = :i"), {"i": ids[one]}
        ).scalar()
        left = conn.execute(text("SELECT count(*) FROM memory_access_pending")).scalar()
    assert touched == AT + timedelta(1) and left == 0


def test_a_pending_row_of_a_memory_that_is_gone_goes_with_it(store: Store) -> None:
    (mid,) = put(store, "gone", ["soon forgotten"], AT)
    with Session(store.engine) as session, session.begin():
        session.execute(PENDING, {"id": mid, "ns": "gone", "hits": 1, "at": AT})
        session.execute(text("DELETE FROM memories WHERE id = :i"), {"i": mid})
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memory_access_pending")).scalar() == 0
