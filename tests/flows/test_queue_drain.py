"""memory-queue-drain end to end through the Prefect engine."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from flows.queue_drain import memory_queue_drain
from storage.embedding import HashingEmbedder
from storage.kernel.settings import Settings
from storage.queue import table as queue
from storage.retrieval import Retriever
from storage.server.engine import open_store
from tests.flows.test_daily_sync import artifact_markdown
from tests.storage.memory_factory import put

T = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_flow_drains_reclaims_purges_and_publishes_its_report(flow_env: Settings) -> None:
    store = open_store(flow_env)
    with Session(store.engine) as session, session.begin():
        done = queue.enqueue(session, "alice", "ADD_MEMORY", {"content": "done long ago"}, now=T).id
        queue.complete(session, [(i, {}) for i in queue.claim(session, "w", 1, T)], T)
        queue.enqueue(session, "alice", "ADD_MEMORY", {"content": "stuck"}, now=T)
        queue.claim(session, "crashed", 1, T)
        for n in range(45):
            queue.enqueue(session, "alice", "SAVE_PREFERENCE", {"content": f"likes {n}"}, now=T)
        queue.enqueue(session, "bob", "ADD_MEMORY", {"content": "x", "session_id": "nope"}, now=T)

    report = memory_queue_drain(as_of=T + timedelta(hours=25), worker="flow-test")

    d = report.drained
    assert (d.reclaimed, d.claimed, d.completed, d.retried, report.purged) == (1, 47, 46, 1, 1)
    assert (report.stats.pending, report.stats.completed, report.stats.dead) == (1, 46, 0)
    with store.engine.connect() as conn:
        kinds = dict(
            conn.execute(text("SELECT kind, count(*) FROM memories GROUP BY kind")).tuples().all()
        )
        left = conn.execute(text("SELECT id FROM memory_write_queue")).scalars().all()
    assert kinds == {"preference": 45, "note": 1} and done not in left
    markdown = asyncio.run(artifact_markdown("memory-queue-drain-report"))
    assert any("| claimed / completed | 47 / 46 |" in m for m in markdown)
    assert any("its session_id is not recorded in the item's namespace" in m for m in markdown)
    assert not any("nope" in m for m in markdown)


def test_a_pass_over_an_empty_queue_publishes_no_artifact(flow_env: Settings) -> None:
    before = len(asyncio.run(artifact_markdown("memory-queue-drain-report")))

    idle = memory_queue_drain(as_of=T, worker="idle-test")
    after_idle = len(asyncio.run(artifact_markdown("memory-queue-drain-report")))
    with Session(open_store(flow_env).engine) as session, session.begin():
        queue.enqueue(session, "alice", "ADD_MEMORY", {"content": "one note"}, now=T)
    busy = memory_queue_drain(as_of=T, worker="idle-test")

    assert idle.idle and (after_idle, idle.drained.claimed) == (before, 0)
    assert not busy.idle and busy.drained.completed == 1
    assert len(asyncio.run(artifact_markdown("memory-queue-drain-report"))) == before + 1


def test_each_pass_folds_the_accesses_searches_counted(flow_env: Settings) -> None:
    store = open_store(flow_env)
    (mid,) = put(store, "alice", ["the dentist is on Friday"], T)
    retriever = Retriever(store.engine, HashingEmbedder(flow_env.embedding.dim))
    for day in (1, 2):
        assert retriever.search("alice", "dentist", as_of=T + timedelta(days=day))

    memory_queue_drain(as_of=T, worker="fold-test")

    with store.engine.connect() as conn:
        row = conn.execute(
            text("SELECT access_count, last_accessed_at FROM memories WHERE id = :i"), {"i": mid}
        ).one()
        left = conn.execute(text("SELECT count(*) FROM memory_access_pending")).scalar()
    assert tuple(row) == (2, T + timedelta(days=2)) and left == 0
