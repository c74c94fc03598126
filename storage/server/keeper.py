"""Keep the embedded server up for a while after the last command, so the next one attaches.

Starting the embedded PostgreSQL costs a command about a second, and stopping it as much
again: without a keeper, every ``archivist search`` paid both. The first process that
attaches spawns a keeper (``python -m storage.server.keeper_main PGDATA SECONDS``), a detached
process that holds the server like any other process (the wheel stops the server when its last
holder leaves). The keeper leaves once no client has been connected for SECONDS, or on
SIGTERM (``archivist db stop``); if it is the last holder then, the server stops.

One keeper per data directory: it holds an exclusive lock on ``.archivist-keeper.lock``
for its whole life, and a second one exits at once. ``Settings.embedded_keep_alive_seconds``
= 0 spawns none: the server stops with the last process, as before.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from storage.kernel.processes import pid_running

LOCK_NAME = ".archivist-keeper.lock"
KEEPER_START_SECONDS = 30.0  # how long a command waits at exit for its keeper to hold
# Client connections other than the keeper's own (walsenders and background workers are
# not clients).
OTHER_CLIENTS = """
    SELECT count(*) FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
"""


def lock_path(pgdata: Path) -> Path:
    return pgdata / LOCK_NAME


@contextmanager
def try_lock(pgdata: Path) -> Iterator[IO[str] | None]:
    """The keeper lock if free (held while the block runs), else None."""
    with lock_path(pgdata).open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def keeper_pid(pgdata: Path) -> int | None:
    """The running keeper's pid, or None when no keeper holds the lock."""
    path = lock_path(pgdata)
    if not path.exists():
        return None
    with try_lock(pgdata) as free:
        if free is not None:
            return None
    text = path.read_text().strip()
    return int(text) if text.isdigit() else None


def ensure_keeper(pgdata: Path, seconds: float) -> None:
    """Spawn a keeper for ``pgdata`` unless one runs (a race spawns two; one exits)."""
    if seconds <= 0 or keeper_pid(pgdata) is not None:
        return
    with (pgdata / "keeper.log").open("ab") as log:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "storage.server.keeper_main", str(pgdata), str(seconds)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # a Ctrl-C in the terminal is the command's alone
            close_fds=True,
        )
    # Before this command leaves (and, the server's last holder, would stop it), the
    # keeper must hold the server: atexit runs this before the wheel's own cleanup.
    atexit.register(wait_held, pgdata, keeper, KEEPER_START_SECONDS)


def wait_held(pgdata: Path, keeper: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether a keeper holds the server of ``pgdata`` (its pid shown) before ``keeper``
    exits or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while keeper_pid(pgdata) is None:
        if keeper.poll() is not None or time.monotonic() >= deadline:
            return keeper_pid(pgdata) is not None
        time.sleep(0.02)
    return True


def stop_keeper(pgdata: Path) -> int | None:
    """Ask the running keeper to leave now (SIGTERM); its pid, or None if none runs."""
    pid = keeper_pid(pgdata)
    if pid is not None:
        with suppress(ProcessLookupError):  # it left on its own meanwhile
            os.kill(pid, signal.SIGTERM)
    return pid


def stop_unheld(pgdata: Path) -> None:
    """A fast shutdown of a server that no live process holds: its holders were killed,
    so none of them will stop it."""
    postmaster = postmaster_pid(pgdata)
    if postmaster is not None and pid_running(postmaster) and not _live_holders(pgdata):
        fast_shutdown(postmaster)


def fast_shutdown(postmaster: int) -> None:
    """Ask the server for a fast shutdown, as ``pg_ctl stop`` would (gone already: fine)."""
    with suppress(ProcessLookupError):
        os.kill(postmaster, signal.SIGINT)


def postmaster_pid(pgdata: Path) -> int | None:
    """The pid ``pgdata/postmaster.pid`` names (its first line), if there is one."""
    try:
        first = (pgdata / "postmaster.pid").read_text().splitlines()[0].strip()
    except (FileNotFoundError, IndexError):
        return None
    return int(first) if first.isdigit() else None


def server_running(pgdata: Path) -> bool:
    """Whether the embedded server of ``pgdata`` runs (its postmaster's pid is alive)."""
    pid = postmaster_pid(pgdata)
    return pid is not None and pid_running(pid)


def wait_stopped(pgdata: Path, timeout: float, leaving: int | None = None) -> list[int]:
    """Wait up to ``timeout`` s for the server to stop while ``leaving`` exits; the other
    live processes that hold it, which keep it up ([] once it stopped)."""
    deadline = time.monotonic() + timeout
    while server_running(pgdata):
        others = [pid for pid in _live_holders(pgdata) if pid != leaving]
        if others or time.monotonic() > deadline:
            return others
        time.sleep(0.1)
    return []


def _live_holders(pgdata: Path) -> list[int]:
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text() or "[]")
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    return [pid for pid in pids if isinstance(pid, int) and pid_running(pid)]


def keep(
    seconds: float,
    clients: Callable[[], int],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once ``clients()`` has been 0 for ``seconds`` (checked every few seconds)."""
    poll = max(0.05, min(5.0, seconds / 4))
    idle_since = clock()
    while clock() - idle_since < seconds:
        sleep(poll)
        if clients() > 0:
            idle_since = clock()
