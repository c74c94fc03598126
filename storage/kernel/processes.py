"""Which process wrote a record, and whether that process is gone.

A crash (``kill -9``, the OOM killer, a power cut) skips every cleanup, so what a process
left to undo on exit stays behind: a temporary file, a ``running`` row in ``runs``, its
pid in the embedded server's holder list. The next process cleans up only what it can
prove dead: a pid of *this* host that no longer runs (a zombie, killed but not yet
reaped, counts as gone), or that now belongs to a process started later than the one
recorded. A pid of another host cannot be checked from here; callers wait for a long
staleness threshold instead. When in doubt a record counts as alive, so the worst case
is cleaning up later, never under a live process.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime

import psutil

# psutil reads a start time from the boot time and the ticks since boot; the two reads of
# one process agree to well under a second.
SAME_START_SECONDS = 2.0


@dataclass(frozen=True)
class ProcessId:
    """A process as a record names it: host, pid and when it started."""

    host: str
    pid: int
    started: datetime


def this_process() -> ProcessId:
    """The calling process."""
    started = psutil.Process(os.getpid()).create_time()
    return ProcessId(host_name(), os.getpid(), datetime.fromtimestamp(started, UTC))


def host_name() -> str:
    """This host's name, as records name it."""
    return socket.gethostname()


def host_tag() -> str:
    """A short, file-name-safe tag of this host (8 hex digits of its name's hash)."""
    return hashlib.blake2s(host_name().encode(), digest_size=4).hexdigest()


def pid_running(pid: int, started: datetime | None = None) -> bool:
    """Whether ``pid`` runs on this host (and, if ``started`` is given, is still the
    process that started then, not a later one that reuses its pid)."""
    if pid <= 0:
        return False
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        if started is None:
            return True
        return abs(float(process.create_time()) - started.timestamp()) <= SAME_START_SECONDS
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # another user's process: it exists
        return True
