"""Privacy: forget a namespace (after an optional export), purge a session, pin, restore."""

from tasks.privacy._erase import ForgetOutcome, forget, restore, set_pin
from tasks.privacy._flow_runs import rename_in_flow_runs
from tasks.privacy._purge import purge_session

__all__ = [
    "ForgetOutcome",
    "forget",
    "purge_session",
    "rename_in_flow_runs",
    "restore",
    "set_pin",
]
