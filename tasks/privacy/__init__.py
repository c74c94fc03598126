"""Privacy: forget a namespace (after an optional export), purge a session, pin, restore."""

from tasks.privacy._erase import ForgetOutcome, forget, restore, set_pin
from tasks.privacy._purge import purge_session

__all__ = [
    "ForgetOutcome",
    "forget",
    "purge_session",
    "restore",
    "set_pin",
]
