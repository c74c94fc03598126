"""Privacy: forget a namespace (after an optional export), purge a session, pin, restore."""

from tasks.privacy._erase import Export, ForgetOutcome, forget, restore, set_pin
from tasks.privacy._flow_runs import rename_in_flow_runs
from tasks.privacy._purge import purge_session
from tasks.privacy._steps import forget_task, rename_own_run_task

__all__ = [
    "Export",
    "ForgetOutcome",
    "forget",
    "forget_task",
    "purge_session",
    "rename_in_flow_runs",
    "rename_own_run_task",
    "restore",
    "set_pin",
]
