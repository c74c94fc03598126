"""The write queue's storage functions: enqueue validation, claims, backoff, reclaim, purge."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from storage.kernel.errors import InputError
from storage.kernel.settings import QueueSettings, Settings
from storage.queue import Enqueued, QueueItem, QueueStats, Reclaimed
from storage.queue import table as queue
from storage.server.engine import Store

T = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
NOTE = {"content": "Alice prefers window seats", "importance": 0.7}
SESSION = {"id": "s1", "namespace": "alice", "agent": "aria"}
MESSAGE = {
    "id": "m1",
    "role": "user",
    "speaker": "Alice",
    "content": "hi",
    "timestamp": "2026-11-20T09:00:00Z",
}


def put(
    store: Store,
    *payloads: dict[str, Any],
    op: str = "ADD_MEMORY",
    at: datetime = T,
    max_attempts: int | None = None,
    **kw: Any,
) -> list[int]:
    if max_attempts is not None:
        kw["settings"] = Settings(queue=QueueSettings(max_attempts=max_attempts))
    with Session(store.engine) as session, session.begin():
        return [queue.enqueue(session, "alice", op, p, now=at, **kw).id for p in payloads]


def claim(store: Store, now: datetime, worker: str = "w1", limit: int = 20) -> list[QueueItem]:
    with Session(store.engine) as session, session.begin():
        return queue.claim(session, worker, limit, now)


def fail(store: Store, item: QueueItem, now: datetime, error: str = "boom") -> str:
    with Session(store.engine) as session, session.begin():
        return queue.fail(session, item, error, now, QueueSettings())


def row(store: Store, item_id: int) -> dict[str, Any]:
    with store.engine.connect() as conn:
        sql = text("SELECT * FROM memory_write_queue WHERE id = :id")
        return dict(conn.execute(sql, {"id": item_id}).mappings().one())


def count(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM memory_write_queue")).scalar_one())


def test_claim_takes_due_items_oldest_first_and_marks_them(store: Store) -> None:
    ids = put(store, NOTE, {"content": "second"}, {"content": "third"})

    first = claim(store, T, limit=2)
    rest = claim(store, T)

    assert [i.id for i in first] == ids[:2] and [i.id for i in rest] == ids[2:]
    assert (
        first[0].payload == {**NOTE, "kind": "note"}
        and first[0].attempts == 1
        and first[0].claimed_by == "w1"
    )
    assert row(store, ids[0])["status"] == "processing"
    assert claim(store, T) == []


def test_items_are_not_claimed_before_they_are_due(store: Store) -> None:
    put(store, NOTE)
    assert claim(store, T - timedelta(seconds=1)) == []


def test_same_idempotency_key_gives_one_item_and_says_so(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        first = queue.enqueue(session, "alice", "ADD_MEMORY", NOTE, idempotency_key="k-1")
    with Session(store.engine) as session, session.begin():
        again = queue.enqueue(
            session, "alice", "ADD_MEMORY", {"content": "b"}, idempotency_key="k-1"
        )
        elsewhere = queue.enqueue(session, "bob", "ADD_MEMORY", NOTE, idempotency_key="k-1")

    assert first == Enqueued(id=first.id, duplicate=False)
    assert again == Enqueued(id=first.id, duplicate=True)
    assert elsewhere.id != first.id and not elsewhere.duplicate
    assert count(store) == 2
    assert row(store, first.id)["payload"] == {**NOTE, "kind": "note"}


BAD = [
    ("alice", "ADD_MEMORY", {"importance": 0.5}, "missing field 'content'"),
    ("alice", "ADD_MEMORY", {"content": 123}, "content: Input should be a valid string"),
    ("alice", "ADD_MEMORY", {"content": "x", "importance": "high"}, "importance:"),
    ("alice", "ADD_MEMORY", {"content": "x", "importance": 1.5}, "importance:"),
    ("alice", "ADD_MEMORY", {"content": "x", "kind": "rumour"}, "kind:"),
    ("alice", "ADD_MEMORY", {"content": "   "}, "content is blank"),
    ("alice", "ADD_MEMORY", {"content": "x", "colour": "red"}, "colour: Extra inputs"),
    ("alice", "ADD_MEMORY", {"content": "x", "occurred_at": "2026-11-20T09:00"}, "occurred_at"),
    ("alice", "ADD_MEMORY", ["not", "an", "object"], "must be a JSON object"),
    ("alice", "REMEMBER", {"content": "x"}, "unknown op 'REMEMBER'"),
    ("al ice", "ADD_MEMORY", {"content": "x"}, "namespace 'al ice' is not valid"),
    ("alice", "FORGET_MEMORY", {"memory_id": "seven"}, "memory_id:"),
    ("alice", "SAVE_PREFERENCE", {"content": "x", "kind": "goal"}, "kind: Extra inputs"),
    ("alice", "RECORD_MESSAGE", {"session": SESSION}, "missing field 'message'"),
    (
        "alice",
        "RECORD_MESSAGE",
        {"session": SESSION, "message": {**MESSAGE, "role": "bot"}},
        "role",
    ),
    ("bob", "RECORD_MESSAGE", {"session": SESSION, "message": MESSAGE}, "not the item's namespace"),
    ("alice", "ADD_MEMORY", {"content": "a\x00b"}, "content: .*NUL character"),
    ("alice", "ADD_MEMORY", {"content": "x", "session_id": "s\x00"}, "session_id: .*NUL"),
    ("alice", "SAVE_PREFERENCE", {"content": "tea \ud83d"}, "content: .*valid string"),
    (
        "alice",
        "RECORD_MESSAGE",
        {"session": SESSION, "message": {**MESSAGE, "speaker": "A\x00"}},
        "message.speaker: .*NUL",
    ),
    (
        "alice",
        "RECORD_MESSAGE",
        {"session": {**SESSION, "title": "T\x00"}, "message": MESSAGE},
        "session.title: .*NUL",
    ),
]


@pytest.mark.parametrize(("namespace", "op", "payload", "message"), BAD)
def test_bad_input_is_refused_at_enqueue_and_nothing_stored(
    store: Store, namespace: str, op: str, payload: Any, message: str
) -> None:
    with Session(store.engine) as session, session.begin():
        with pytest.raises(InputError, match=message.replace("(", r"\(")):
            queue.enqueue(session, namespace, op, payload)
    assert count(store) == 0


def test_bad_options_are_refused(store: Store) -> None:
    with pytest.raises(ValidationError, match="max_attempts"):  # the queue's settings say
        QueueSettings(max_attempts=0)
    with Session(store.engine) as session, session.begin():
        with pytest.raises(InputError, match="idempotency_key"):
            queue.enqueue(session, "alice", "ADD_MEMORY", NOTE, idempotency_key="k" * 201)
        with pytest.raises(InputError, match="idempotency_key holds a NUL"):
            queue.enqueue(session, "alice", "ADD_MEMORY", NOTE, idempotency_key="k\x00")
    assert count(store) == 0


def test_failures_back_off_exponentially_then_the_item_is_dead(store: Store) -> None:
    (item_id,) = put(store, NOTE)

    (first,) = claim(store, T)
    assert fail(store, first, T, "embedder down") == "pending"
    assert row(store, item_id)["available_at"] == T + timedelta(seconds=2)
    assert claim(store, T + timedelta(seconds=1.9)) == []

    (second,) = claim(store, T + timedelta(seconds=2))
    assert fail(store, second, T + timedelta(seconds=2)) == "pending"
    assert row(store, item_id)["available_at"] == T + timedelta(seconds=2 + 4)

    (third,) = claim(store, T + timedelta(seconds=6))
    assert third.attempts == 3
    assert fail(store, third, T + timedelta(seconds=6), "still down") == "dead"

    dead = row(store, item_id)
    assert dead["status"] == "dead" and dead["attempts"] == 3 and dead["last_error"] == "still down"
    assert claim(store, T + timedelta(days=1)) == []


def test_a_permanent_failure_is_dead_at_once_with_attempts_left(store: Store) -> None:
    (item_id,) = put(store, NOTE)
    (item,) = claim(store, T)

    with Session(store.engine) as session, session.begin():
        status = queue.fail(session, item, "refused for good", T, QueueSettings(), permanent=True)

    dead = row(store, item_id)
    assert status == "dead" and (dead["status"], dead["attempts"]) == ("dead", 1)
    assert dead["max_attempts"] == 3 and dead["last_error"] == "refused for good"
    assert claim(store, T + timedelta(days=1)) == []


def test_backoff_is_capped() -> None:
    settings = QueueSettings()
    assert [queue.backoff(n, settings).total_seconds() for n in (1, 2, 3, 4)] == [2, 4, 8, 16]
    assert queue.backoff(20, settings) == timedelta(seconds=300)


def test_stuck_items_are_reclaimed_and_exhausted_ones_go_dead(store: Store) -> None:
    again, once = put(store, NOTE), put(store, {"content": "once"}, max_attempts=1)
    claim(store, T)
    later = T + timedelta(minutes=11)

    with Session(store.engine) as session, session.begin():
        assert queue.reclaim(session, T + timedelta(minutes=9), timedelta(minutes=10)) == (
            Reclaimed(requeued=0, dead=0)
        )
        reclaimed = queue.reclaim(session, later, timedelta(minutes=10))

    assert reclaimed == Reclaimed(requeued=1, dead=1)
    requeued, dead = row(store, again[0]), row(store, once[0])
    assert requeued["status"] == "pending" and requeued["last_error"].startswith("stuck")
    assert dead["status"] == "dead" and "attempts exhausted" in dead["last_error"]
    (item,) = claim(store, later, worker="w2")
    assert item.id == again[0] and item.attempts == 2


def wait_until_ended(store: Store, pid: int) -> None:
    """A backend ends once it reads its client's close: wait for that, not for a time."""
    ended = text("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = :pid")
    deadline = time.monotonic() + 30
    with store.engine.connect() as conn:
        while not conn.execute(ended, {"pid": pid}).scalar_one():
            assert time.monotonic() < deadline, f"backend {pid} still running"
            conn.rollback()  # a new transaction reads pg_stat_activity afresh
            time.sleep(0.01)


def test_claims_of_an_ended_backend_are_reclaimed_at_once_unless_detection_is_off(
    store: Store,
) -> None:
    (item_id,) = put(store, NOTE)
    elsewhere = create_engine(store.engine.url, poolclass=NullPool)  # closes on release
    with Session(elsewhere) as session, session.begin():
        (held,) = queue.claim(session, "gone", 20, T)
        pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    elsewhere.dispose()
    wait_until_ended(store, pid)

    off = QueueSettings(detect_gone_workers=False)
    with Session(store.engine) as session, session.begin():
        blind = queue.queue_stats(session, T, off), queue.queue_stats(session, T)
        kept = queue.reclaim(session, T, timedelta(minutes=10), gone_workers=False)
        reclaimed = queue.reclaim(session, T, timedelta(minutes=10))

    assert (blind[0].abandoned, blind[1].abandoned, blind[1].stuck) == (0, 1, 0)
    assert kept == Reclaimed(requeued=0, dead=0) and reclaimed == Reclaimed(requeued=1, dead=0)
    assert row(store, item_id)["claimer_pid"] == pid and held.claimed_by == "gone"
    assert row(store, item_id)["last_error"].startswith(
        f"worker gone: claimed by gone (backend pid {pid})"
    )


def test_a_taken_over_claim_can_neither_complete_nor_fail(store: Store) -> None:
    put(store, NOTE)
    (old,) = claim(store, T, worker="slow")
    with Session(store.engine) as session, session.begin():
        queue.reclaim(session, T + timedelta(minutes=11), timedelta(minutes=10))
    (new,) = claim(store, T + timedelta(minutes=11), worker="fast")

    with Session(store.engine) as session, session.begin():
        assert queue.complete(session, [(old, {"memory_id": 1})], T) == set()
        assert queue.fail(session, old, "late", T, QueueSettings()) == "lost"
        assert queue.complete(session, [(new, {"memory_id": 2})], T) == {new.id}
    assert row(store, new.id)["result"] == {"memory_id": 2}


def test_stats_count_statuses_dead_stuck_and_the_oldest_wait(store: Store) -> None:
    ids = put(store, NOTE, {"content": "b"}, {"content": "c"}, {"content": "d"}, max_attempts=1)
    items = claim(store, T, limit=3)
    with Session(store.engine) as session, session.begin():
        queue.complete(session, [(items[0], {})], T)
        queue.fail(session, items[1], "bad", T, QueueSettings())

    with Session(store.engine) as session:
        stats = queue.queue_stats(session, T + timedelta(minutes=15))
        dead = queue.dead_items(session)

    assert stats == QueueStats(
        pending=1,
        ready=1,
        processing=1,
        stuck=1,
        abandoned=0,
        completed=1,
        dead=1,
        oldest_pending_seconds=15 * 60,
    )
    assert [(d.id, d.last_error) for d in dead] == [(ids[1], "bad")]


def test_stats_of_an_empty_queue(store: Store) -> None:
    with Session(store.engine) as session:
        stats = queue.queue_stats(session, None)
    assert stats.pending == 0 and stats.oldest_pending_seconds is None


def test_stats_of_one_namespace_count_its_items_alone(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        for namespace in ("alice", "alice2", "alice2", "bob"):
            queue.enqueue(session, namespace, "ADD_MEMORY", NOTE, now=T)
    with Session(store.engine) as session:
        each = {
            ns: queue.queue_stats(session, T, namespace=ns).pending for ns in ("alice", "alice2")
        }
        every = queue.queue_stats(session, T).pending
    assert (each, every) == ({"alice": 1, "alice2": 2}, 4)


def test_purge_removes_only_completed_items_older_than_the_threshold(store: Store) -> None:
    long_ago = T - timedelta(hours=30)
    old, recent, pending = put(store, NOTE, {"content": "b"}, {"content": "c"}, at=long_ago)
    (dead,) = put(store, {"content": "d"}, max_attempts=1, at=long_ago)
    items = {i.id: i for i in claim(store, T - timedelta(hours=30), limit=4)}
    with Session(store.engine) as session, session.begin():
        queue.complete(session, [(items[old], {})], T - timedelta(hours=25))
        queue.complete(session, [(items[recent], {})], T - timedelta(hours=1))
        queue.fail(session, items[dead], "x", T - timedelta(hours=30), QueueSettings())
        queue.fail(session, items[pending], "x", T - timedelta(hours=30), QueueSettings())

    with Session(store.engine) as session, session.begin():
        purged = queue.purge_completed(session, T, timedelta(hours=24))

    with store.engine.connect() as conn:
        left = set(conn.execute(text("SELECT id FROM memory_write_queue")).scalars())
    assert purged == 1 and left == {recent, dead, pending}


def test_without_a_pinned_time_the_database_clock_is_used(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        item_id = queue.enqueue(session, "alice", "UPDATE_GOAL", {"content": "run a marathon"}).id
    with Session(store.engine) as session, session.begin():
        (item,) = queue.claim(session, "w", 5, None)
    assert item.id == item_id and item.claimed_at.tzinfo is not None
