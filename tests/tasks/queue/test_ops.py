"""Executing queued writes: exactly once under parallel drainers, failures, crashes, worker."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DataError, ProgrammingError
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.errors import InputError, PermanentError
from storage.kernel.settings import Settings
from storage.queue import table as queue
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.queue import DrainReport, describe_failure, drain_once, is_permanent, run_worker
from tests.helpers import add_session, chat
from tests.storage.memory_factory import put

T = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(384)


def enqueue(store: Store, namespace: str, op: str, payloads: list[dict[str, Any]]) -> list[int]:
    with Session(store.engine) as session, session.begin():
        return [queue.enqueue(session, namespace, op, p, now=T).id for p in payloads]


def drain(store: Store, now: datetime = T, worker: str = "w1") -> DrainReport:
    return drain_once(store.engine, EMBEDDER, store.settings, worker, now)


def items(store: Store) -> dict[int, dict[str, Any]]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM memory_write_queue")).mappings()
        return {r["id"]: dict(r) for r in rows}


def memories(store: Store) -> list[dict[str, Any]]:
    sql = text("SELECT id, namespace, kind, content, content_key, session_id FROM memories")
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sql).mappings()]


def test_four_drainers_run_each_of_1000_items_exactly_once(store: Store) -> None:
    enqueue(store, "alice", "ADD_MEMORY", [{"content": f"fact number {n}"} for n in range(1000)])
    start = threading.Barrier(4)
    reports: list[DrainReport] = []

    def drainer(name: str) -> None:
        start.wait()
        reports.append(drain(store, worker=name))

    threads = [threading.Thread(target=drainer, args=(f"d{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    rows = memories(store)
    assert len(rows) == 1000 and len({r["content_key"] for r in rows}) == 1000
    assert sorted(r["content"] for r in rows) == sorted(f"fact number {n}" for n in range(1000))
    queued = items(store).values()
    assert {q["status"] for q in queued} == {"completed"} and {q["attempts"] for q in queued} == {1}
    assert len({q["result"]["memory_id"] for q in queued}) == 1000
    assert sum(r.claimed for r in reports) == 1000 == sum(r.completed for r in reports)
    assert sum(1 for r in reports if r.completed) >= 2  # the work was really shared


def test_an_added_memory_is_searchable_after_one_drain(store: Store, settings: Settings) -> None:
    (item_id,) = enqueue(
        store,
        "alice",
        "ADD_MEMORY",
        [{"content": "Alice's locker code is zebra42", "kind": "fact"}],
    )

    report = drain(store)

    retriever = Retriever(store.engine, EMBEDDER, settings.retrieval, settings.tz)
    hits = retriever.search("alice", "locker code zebra42", as_of=T, record_access=False)
    assert report.completed == 1
    assert hits[0].content == "Alice's locker code is zebra42" and hits[0].kind == "fact"
    assert items(store)[item_id]["result"] == {"memory_id": hits[0].memory_id, "kind": "fact"}


def test_each_op_writes_what_it_says(store: Store) -> None:
    session = {"id": "s1", "namespace": "alice", "agent": "aria"}
    message = {"id": "m1", "role": "user", "speaker": "Alice", "content": "hi", "timestamp": T}
    enqueue(store, "alice", "ADD_MEMORY", [{"content": "in a session", "session_id": "s1"}])
    enqueue(store, "alice", "RECORD_MESSAGE", [{"session": session, "message": message}])
    enqueue(store, "alice", "SAVE_PREFERENCE", [{"content": "aisle seats", "importance": 0.9}])
    enqueue(store, "alice", "UPDATE_GOAL", [{"content": "run a marathon"}])

    report = drain(store)

    assert report.completed == 4  # one batch: the message is recorded before the memory
    kinds = {(r["kind"], r["content"], r["session_id"]) for r in memories(store)}
    assert kinds == {
        ("note", "in a session", "s1"),
        ("preference", "aisle seats", None),
        ("goal", "run a marathon", None),
    }
    with store.engine.connect() as conn:
        recorded = conn.execute(text("SELECT session_id, id, content FROM chat_messages")).all()
    assert [tuple(r) for r in recorded] == [("s1", "m1", "hi")]


def test_a_bad_item_fails_alone_backs_off_and_dies_with_its_error(store: Store) -> None:
    good = enqueue(store, "alice", "ADD_MEMORY", [{"content": "fine"}, {"content": "also fine"}])
    (bad,) = enqueue(store, "alice", "ADD_MEMORY", [{"content": "x", "session_id": "nope"}])

    first = drain(store)
    second = drain(store, T + timedelta(seconds=2))
    third = drain(store, T + timedelta(seconds=6))

    assert (first.completed, first.retried, second.retried, third.dead) == (2, 1, 1, 1)
    assert {items(store)[i]["status"] for i in good} == {"completed"}
    dead = items(store)[bad]
    assert dead["status"] == "dead" and dead["attempts"] == 3
    assert "its session_id is not recorded in the item's namespace" in dead["last_error"]
    assert f"item {bad} " in third.errors[0]
    # The report and the log outlive a forget: the item's values stay out of them.
    assert "nope" not in third.errors[0] + dead["last_error"]
    assert "alice" not in third.errors[0]
    assert len(memories(store)) == 2


def test_forget_deletes_only_the_namespaces_own_memory(store: Store) -> None:
    mine, theirs = put(store, "alice", ["mine"], T)[0], put(store, "bob", ["theirs"], T)[0]
    ids = enqueue(
        store, "alice", "FORGET_MEMORY", [{"memory_id": m} for m in (mine, theirs, 999_999)]
    )

    report = drain(store)

    assert [r["content"] for r in memories(store)] == ["theirs"]
    state = items(store)
    assert state[ids[0]]["result"] == {"memory_id": mine, "deleted": True}
    assert state[ids[2]]["result"] == {"memory_id": 999_999, "deleted": False}
    assert state[ids[1]]["status"] == "dead" and (report.dead, report.retried) == (1, 0)
    assert (
        "belongs to another namespace than the item's; not deleted" in (state[ids[1]]["last_error"])
    )


def test_a_permanent_refusal_is_dead_at_once_with_its_reason(store: Store) -> None:
    (theirs,) = put(store, "bob", ["bob's memory"], T)
    add_session(store, "s-bob", "bob", chat(T - timedelta(hours=1), "hello", "hi"))
    bob_session = {"id": "s-bob", "namespace": "alice", "agent": "aria"}
    message = {"id": "m9", "role": "user", "speaker": "Alice", "content": "hi", "timestamp": T}
    (forget,) = enqueue(store, "alice", "FORGET_MEMORY", [{"memory_id": theirs}])
    (note,) = enqueue(store, "alice", "ADD_MEMORY", [{"content": "x", "session_id": "s-bob"}])
    (msg,) = enqueue(
        store, "alice", "RECORD_MESSAGE", [{"session": bob_session, "message": message}]
    )
    (fine,) = enqueue(store, "alice", "ADD_MEMORY", [{"content": "fine"}])

    report = drain(store)
    later = drain(store, T + timedelta(days=1))

    assert (report.completed, report.dead, report.retried, later.claimed) == (1, 3, 0, 0)
    state = items(store)
    assert state[fine]["status"] == "completed"
    reasons = {
        forget: f"memory {theirs} belongs to another namespace than the item's; not deleted",
        note: "its session_id belongs to another namespace than the item's; nothing written",
        msg: "its session.id belongs to another namespace; nothing recorded",
    }
    for item_id, reason in reasons.items():
        assert (state[item_id]["status"], state[item_id]["attempts"]) == ("dead", 1)
        assert state[item_id]["last_error"] == (
            f"PermanentError: queue item {item_id}: {reason} (permanent: not retried)"
        )
    assert [r["content"] for r in memories(store)] == ["bob's memory", "fine"]


def test_values_the_database_rejects_are_permanent_other_errors_are_not(store: Store) -> None:
    with store.engine.connect() as conn:
        with pytest.raises(DataError) as bad_value:
            conn.execute(text("SELECT CAST('seven' AS integer)"))
        conn.rollback()
        with pytest.raises(ProgrammingError) as missing:
            conn.execute(text("SELECT * FROM no_such_table"))

    assert is_permanent(bad_value.value) and is_permanent(PermanentError("another namespace"))
    assert not is_permanent(missing.value) and not is_permanent(InputError("not recorded yet"))


def test_a_database_refusal_is_described_without_the_values_it_quotes(store: Store) -> None:
    with store.engine.connect() as conn, pytest.raises(DataError) as refused:
        conn.execute(text("SELECT CAST(:v AS integer)"), {"v": "zebrafog"})

    assert "zebrafog" in str(refused.value)  # statement, parameters and message quote it
    described = describe_failure(refused.value)
    assert described == "DataError (InvalidTextRepresentation, SQLSTATE 22P02)"


def test_a_crash_between_claim_and_complete_is_recovered_exactly_once(store: Store) -> None:
    (item_id,) = enqueue(store, "alice", "ADD_MEMORY", [{"content": "survives a crash"}])
    with Session(store.engine) as session, session.begin():
        queue.claim(session, "crashed-worker", 20, T)  # ...and the worker dies here

    early = drain(store, T + timedelta(minutes=5))
    late = drain(store, T + timedelta(minutes=11))
    again = drain(store, T + timedelta(minutes=30))

    assert (early.claimed, late.reclaimed, late.completed, again.claimed) == (0, 1, 1, 0)
    assert [r["content"] for r in memories(store)] == ["survives a crash"]
    assert items(store)[item_id]["attempts"] == 2


def test_max_batches_bounds_one_drain(store: Store, settings: Settings) -> None:
    enqueue(store, "alice", "ADD_MEMORY", [{"content": f"n{n}"} for n in range(50)])
    small = settings.model_copy(
        update={"queue": settings.queue.model_copy(update={"claim_batch": 10})}
    )

    report = drain_once(store.engine, EMBEDDER, small, "w", T, max_batches=2)

    assert (report.batches, report.completed) == (2, 20)


def test_the_worker_picks_up_an_enqueued_item_quickly_and_stops(store: Store) -> None:
    stop = threading.Event()
    batches: list[DrainReport] = []
    worker = threading.Thread(
        target=run_worker,
        args=(store.engine, EMBEDDER, store.settings),
        kwargs={"stop": stop, "on_report": batches.append},
    )
    worker.start()
    try:
        time.sleep(0.3)  # let it reach its wait
        with Session(store.engine) as session, session.begin():
            item_id = queue.enqueue(session, "alice", "ADD_MEMORY", {"content": "live"}).id
        deadline = time.monotonic() + 5
        while items(store)[item_id]["status"] != "completed" and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        worker.join(timeout=5)

    assert not worker.is_alive()
    assert items(store)[item_id]["status"] == "completed"
    assert sum(b.completed for b in batches) == 1


def access_state(store: Store, memory_id: int) -> tuple[int, int]:
    """The memory's access count, and its accesses still pending a fold."""
    with store.engine.connect() as conn:
        count = conn.execute(
            text("SELECT access_count FROM memories WHERE id = :id"), {"id": memory_id}
        ).scalar_one()
        pending = conn.execute(
            text("SELECT coalesce(sum(hits), 0) FROM memory_access_pending WHERE memory_id = :id"),
            {"id": memory_id},
        ).scalar_one()
    return int(count), int(pending)


def test_the_worker_folds_the_accesses_searches_counted(store: Store) -> None:
    (memory_id,) = put(store, "alice", ["the dentist is on Friday"], T)
    Retriever.from_settings(store.settings).search("alice", "dentist", as_of=T)
    assert access_state(store, memory_id) == (0, 1)  # counted, not folded yet
    stop, reports = threading.Event(), list[DrainReport]()
    worker = threading.Thread(
        target=lambda: reports.append(run_worker(store.engine, EMBEDDER, store.settings, stop=stop))
    )
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while access_state(store, memory_id)[1] and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the store while the worker runs, under a deadline
    finally:
        stop.set()
        worker.join(timeout=30)

    assert access_state(store, memory_id) == (1, 0)
    assert [r.accesses_folded for r in reports] == [1]
