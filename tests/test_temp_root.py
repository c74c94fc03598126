"""The tests' temporary roots: a killed run's root goes at the next start, with what it left
running; a live run's root, and anything not a root, is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests import temp_root

# A run that makes its root, starts a process that outlives it (as a Prefect test server or
# a worker would), says both, then waits to be killed.
RUN = """
import os, subprocess, sys, time
from tests import temp_root
root = temp_root.make_root(sys.argv[1])
os.environ[temp_root.ENV] = str(root)
left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                        start_new_session=True, stdout=subprocess.DEVNULL)
print(root, left.pid, flush=True)
time.sleep(300)
"""


@pytest.fixture
def parent(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "roots"
    folder.mkdir()
    yield folder


def killed_run(parent: Path) -> tuple[Path, psutil.Process]:
    """The root of a run killed with SIGKILL, and the process it left running."""
    run = subprocess.Popen(
        [sys.executable, "-c", RUN, str(parent)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert run.stdout is not None
    root, left = run.stdout.readline().split()
    os.kill(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    run.stdout.close()
    return Path(root), psutil.Process(int(left))


def running(process: psutil.Process) -> bool:
    """Whether ``process`` still runs (a zombie waiting for its reaper has ended)."""
    psutil.wait_procs([process], timeout=30)
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_killed_runs_root_goes_with_what_it_left_running_and_a_live_ones_stays(
    parent: Path,
) -> None:
    dead, left = killed_run(parent)
    live = temp_root.make_root(str(parent))  # this process's: a run in progress
    young = parent / f"{temp_root.PREFIX}being-made"  # no owner written yet
    young.mkdir()
    try:
        assert left.is_running()

        removed = temp_root.remove_stale([str(parent)])

        assert removed == [dead] and not dead.exists()
        assert live.is_dir() and young.is_dir()
        assert not running(left)  # ended, not left running
    finally:
        if left.is_running():
            left.kill()


def test_nothing_but_a_root_of_the_tests_is_ever_removed(tmp_path: Path) -> None:
    for path in (Path("."), Path("/"), tmp_path, Path(f"{temp_root.PREFIX}relative")):
        with pytest.raises(ValueError, match="not a root of the tests"):
            temp_root.remove(path)
    assert tmp_path.is_dir()
