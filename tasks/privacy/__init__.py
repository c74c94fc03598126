"""Privacy: forget a namespace (after an optional export), purge a session, pin, restore."""

from tasks.privacy._erase import ForgetOutcome, forget, purge_session, restore, set_pin

__all__ = [
    "ForgetOutcome",
    "forget",
    "purge_session",
    "restore",
    "set_pin",
]
