"""``memory-queue-drain``: execute queued writes, reclaim stuck or abandoned ones, purge."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import flow_run
from tasks.common import (
    fold_access_task,
    notify_flow_failure,
)
from tasks.queue import default_worker_name
from tasks.queue.steps import QueueRunReport, drain_task, purge_task, stats_task

FLOW_NAME = "memory-queue-drain"


@flow(
    name=FLOW_NAME,
    description="Apply queued memory writes; retry failed ones, reclaim stuck ones, purge done.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_queue_drain(
    as_of: datetime | None = None,
    max_batches: Annotated[int, Field(ge=1, le=100_000)] = 50,
    worker: Annotated[str | None, Field(min_length=1, max_length=100)] = None,
) -> QueueRunReport:
    """Apply the queued memory writes that are due, each exactly once.

    Claims them in batches, retries failures with backoff, takes back items a crashed
    worker left behind and purges old completed ones.

    Args:
        as_of: Run as if it were this moment (ISO 8601). A time without a zone is read
            in ARCHIVIST_TIMEZONE. Empty: the database's clock.
        max_batches: Stop after claiming this many batches; the rest waits for the
            next run.
        worker: The name written on the items this run claims, to tell workers apart.
            Empty: host name, process and thread.
    """
    name = worker or default_worker_name()
    parameters = {"max_batches": max_batches, "worker": name}
    with flow_run(FLOW_NAME, as_of, parameters=parameters) as run:
        now = None if as_of is None else run.as_of  # None: the database's clock decides
        drained = drain_task(run.store, run.embedder, name, now, max_batches)
        purged = purge_task(run.store, now)
        fold_access_task(run.store)  # searches' accesses reach the memories within one interval
        stats = stats_task(run.store, now)
        report = QueueRunReport(
            as_of=run.as_of.isoformat(),
            worker=name,
            drained=drained,
            purged=purged,
            stats=stats,
            seconds=(datetime.now(UTC) - run.started).total_seconds(),
        )
        run.finish(report)
        if not report.idle:  # a pass over an empty queue leaves its runs row, not an artifact
            run.publish(report)
    return report
