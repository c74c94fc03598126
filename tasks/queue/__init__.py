"""``memory-queue-drain``'s work: execute queued writes, drain, and the continuous worker."""

from tasks.queue._execute import execute, is_permanent
from tasks.queue._ops import (
    DrainReport,
    Hooks,
    default_worker_name,
    describe_failure,
    drain_once,
    fold_pending,
    run_batch,
    run_worker,
)
from tasks.queue._steps import QueueRunReport, drain_task, purge_task, stats_task

__all__ = [
    "DrainReport",
    "Hooks",
    "QueueRunReport",
    "default_worker_name",
    "describe_failure",
    "drain_once",
    "drain_task",
    "execute",
    "fold_pending",
    "is_permanent",
    "purge_task",
    "run_batch",
    "run_worker",
    "stats_task",
]
