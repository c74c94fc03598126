"""Which process wrote a record, and whether that process is gone.

A crash (``kill -9``, the OOM killer, a power cut) skips every cleanup, so what a process
left to undo on exit stays behind: a temporary file, its pid in the embedded server's
holder list. The next process cleans up only what it can prove dead: a pid of *this*
host that no longer runs (a zombie, killed but not yet reaped, counts as gone). A pid of
another host cannot be checked from here; callers wait for a long staleness threshold
instead. When in doubt a record counts as alive, so the worst case is cleaning up later,
never under a live process.
"""

from __future__ import annotations

import hashlib
import socket

import psutil


def host_tag() -> str:
    """A short, file-name-safe tag of this host (8 hex digits of its name's hash)."""
    return hashlib.blake2s(socket.gethostname().encode(), digest_size=4).hexdigest()


def pid_running(pid: int) -> bool:
    """Whether ``pid`` runs on this host."""
    if pid <= 0:
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # another user's process: it exists
        return True
