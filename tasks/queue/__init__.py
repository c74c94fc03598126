"""``memory-queue-drain``'s work: execute queued writes, drain, and the continuous worker.

Without Prefect: ``archivist worker`` and ``archivist queue add`` and ``stats`` start on
this alone. The flow's Prefect tasks are in ``tasks.queue.steps``."""

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

__all__ = [
    "DrainReport",
    "Hooks",
    "default_worker_name",
    "describe_failure",
    "drain_once",
    "execute",
    "fold_pending",
    "is_permanent",
    "run_batch",
    "run_worker",
]
