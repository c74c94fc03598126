"""The tests' temporary root: made with its owner recorded, removed at exit with the servers
still running in it, and removed by the next run when its owner is gone.

A run killed with ``kill -9`` (or whose terminal went away) ran no exit hook: its root stayed,
with every embedded PostgreSQL it started still running on it (``pg_ctl`` starts them in a
session of their own, holding their shared memory) and the Prefect test servers of its
workers. On ``/dev/shm`` that is memory: 16 such roots of ~700 MB each held 12 GB. Each root
now holds ``owner.json`` (the pid of the pytest process that made it, and when that process
started, so a later process that reuses the pid is not taken for it); a run starting finds
the roots of its kind whose owner is gone, stops what still runs there and removes them. A
root whose owner lives, another run in progress, is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

PREFIX = "archivist-tests-"
OWNER = "owner.json"
ENV = "PYTEST_DEBUG_TEMPROOT"  # pytest's: the root of every test folder of the run
# A root without an owner file: made by a run from before owners were recorded, or made this
# instant and its owner not yet written. Only one unchanged this long (``_last_change``), that
# no live process but a PostgreSQL server names, is taken for stale.
UNOWNED_AFTER_SECONDS = 3600.0
STOP_SECONDS = 10.0


def make_root(parent: str | None) -> Path:
    """A new root under ``parent`` (None: the usual temp folder), owned by this process."""
    root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    me = psutil.Process()
    (root / OWNER).write_text(json.dumps({"pid": me.pid, "started": me.create_time()}))
    return root


def remove_stale(parents: list[str]) -> list[Path]:
    """Remove the roots under ``parents`` whose run is gone, after stopping what runs there
    still; the roots removed."""
    removed = []
    for parent in dict.fromkeys(parents):
        for root in Path(parent).glob(f"{PREFIX}*"):
            if root.is_dir() and not root.is_symlink() and _stale(ours(root)):
                _end_processes_of(root)
                remove(root)
                removed.append(root)
    return removed


def ours(root: Path) -> Path:
    """``root`` if it is a root of this kind (an absolute path named ``PREFIX...``), else a
    ValueError: nothing else is ever signalled into or deleted."""
    if not (root.is_absolute() and root.name.startswith(PREFIX) and root.parent != root):
        raise ValueError(f"not a root of the tests: {str(root)!r}")
    return root


def remove(root: Path) -> None:
    """Stop the PostgreSQL servers whose data lives under ``root``, then delete it."""
    root = ours(root)
    for postmaster in _postmasters(root):
        _stop(postmaster)
    shutil.rmtree(root, ignore_errors=True)


def _stale(root: Path) -> bool:
    try:
        owner = json.loads((root / OWNER).read_text())
    except FileNotFoundError:
        return time.time() - _last_change(root) > UNOWNED_AFTER_SECONDS and not any(
            p for p in _processes_of(root) if p.name() != "postgres"
        )
    except (OSError, ValueError):
        return False  # being written, or unreadable: not ours to judge
    try:
        process = psutil.Process(int(owner["pid"]))
        return (
            process.status() == psutil.STATUS_ZOMBIE
            or abs(process.create_time() - float(owner["started"])) > 1.0
        )
    except psutil.NoSuchProcess:
        return True
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def _last_change(root: Path) -> float:
    """When a folder at most two levels under ``root`` last changed: a run in progress makes
    a folder for each test in ``pytest-of-<user>/pytest-<n>``, so its root never looks old."""
    latest = 0.0
    for depth, pattern in enumerate(("", "*", "*/*")):
        for folder in [root] if depth == 0 else root.glob(pattern):
            try:
                latest = max(latest, folder.stat().st_mtime)
            except OSError:
                return time.time()  # changing as we look
    return latest


def _processes_of(root: Path) -> Iterator[psutil.Process]:
    """The live processes of the run that owned ``root``: those started with it as their
    tests' root (the workers, the servers they started), or naming it on their command line
    (PostgreSQL, started with a clean environment)."""
    path = str(ours(root))
    for process in psutil.process_iter():
        try:
            if process.pid == os.getpid():
                continue
            if process.environ().get(ENV) == path or any(
                arg == path or arg.startswith(f"{path}/") for arg in process.cmdline()
            ):
                yield process
        except psutil.Error:
            continue


def _end_processes_of(root: Path) -> None:
    """SIGTERM, then SIGKILL after a while, to what a gone run left running (its Prefect
    test servers, a worker, a command), but its PostgreSQL servers: ``remove`` stops those
    so that they free their shared memory."""
    left = []
    for process in _processes_of(root):
        try:
            if process.name() != "postgres":
                process.send_signal(signal.SIGTERM)
                left.append(process)
        except psutil.Error:
            continue
    for process in psutil.wait_procs(left, timeout=STOP_SECONDS)[1]:
        try:
            process.kill()
        except psutil.Error:
            pass


def _postmasters(root: Path) -> Iterator[psutil.Process]:
    """The running postmasters of the data directories under ``root``."""
    for folder, subfolders, files in os.walk(root):
        if "PG_VERSION" not in files:
            continue
        subfolders.clear()  # a data directory holds no other
        try:
            pid = int((Path(folder) / "postmaster.pid").read_text().split("\n", 1)[0])
            process = psutil.Process(pid)
            if process.name() == "postgres" and folder in " ".join(process.cmdline()):
                yield process
        except (OSError, ValueError, psutil.Error):
            continue


def _stop(postmaster: psutil.Process) -> None:
    """A fast shutdown (SIGINT): the server ends its backends and removes its shared memory
    segments (``/dev/shm/PostgreSQL.*``); SIGKILL if it has not within ``STOP_SECONDS``."""
    try:
        postmaster.send_signal(signal.SIGINT)
        postmaster.wait(STOP_SECONDS)
    except psutil.TimeoutExpired:
        postmaster.kill()
    except psutil.Error:
        pass
