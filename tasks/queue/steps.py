"""Thin Prefect tasks of ``memory-queue-drain``, and its run report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from sqlalchemy.orm import Session

from storage import queue
from storage.embedding import Embedder
from storage.queue import QueueStats
from storage.server.engine import Store
from tasks.common import IO_RETRY, readable
from tasks.files import md_inline
from tasks.queue._ops import DrainReport, drain_once


@dataclass
class QueueRunReport:
    """One drain run: what was executed, purged, and the queue's state afterwards."""

    as_of: str
    worker: str
    drained: DrainReport
    purged: int
    stats: QueueStats
    seconds: float

    @property
    def idle(self) -> bool:
        """Nothing claimed, reclaimed, purged or failed: a safety-net pass over an empty
        queue, which publishes no artifact."""
        d = self.drained
        return not (d.claimed or d.reclaimed or d.reclaimed_dead or d.errors or self.purged)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        d, s = self.drained, self.stats
        rows = [
            ("as of", readable(self.as_of)),
            ("worker", self.worker),
            ("batches", d.batches),
            ("claimed / completed", f"{d.claimed} / {d.completed}"),
            ("failed: retry later / dead", f"{d.retried} / {d.dead}"),
            ("claims lost to another drainer", d.lost),
            (
                "items reclaimed (stuck or worker gone) / dead",
                f"{d.reclaimed} / {d.reclaimed_dead}",
            ),
            ("completed items purged", self.purged),
            ("queue now: pending (due) / processing", f"{s.pending} ({s.ready}) / {s.processing}"),
            ("queue now: completed / dead", f"{s.completed} / {s.dead}"),
            ("queue now: stuck / worker gone", f"{s.stuck} / {s.abandoned}"),
            ("oldest pending item waits (s)", _seconds(s.oldest_pending_seconds)),
            ("seconds", f"{self.seconds:.2f}"),
        ]
        lines = ["# memory-queue-drain report", "", "| item | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in rows]
        if d.errors:
            lines += ["", "## Failed items", ""] + [f"- {md_inline(e)}" for e in d.errors]
        return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


@task(name="drain-queue", cache_policy=NO_CACHE, **IO_RETRY)
def drain_task(
    store: Store, embedder: Embedder, worker: str, now: datetime | None, max_batches: int
) -> DrainReport:
    """Reclaim abandoned and stuck items, then execute due ones batch by batch."""
    report = drain_once(
        store.engine, embedder, store.settings, worker, now, max_batches=max_batches
    )
    logger = get_run_logger()
    logger.info(
        "%d batches: %d completed, %d retry later, %d dead, %d reclaimed",
        report.batches,
        report.completed,
        report.retried,
        report.dead,
        report.reclaimed,
    )
    for error in report.errors:
        logger.warning("failed: %s", error)
    return report


@task(name="purge-completed", cache_policy=NO_CACHE, **IO_RETRY)
def purge_task(store: Store, now: datetime | None) -> int:
    hours = store.settings.queue.purge_completed_after_hours
    with Session(store.engine) as session, session.begin():
        return queue.purge_completed(session, now, timedelta(hours=hours))


@task(name="queue-stats", cache_policy=NO_CACHE, **IO_RETRY)
def stats_task(store: Store, now: datetime | None) -> QueueStats:
    with Session(store.engine) as session:
        return queue.queue_stats(session, now, store.settings.queue)
