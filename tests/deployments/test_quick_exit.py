"""The reading commands end without the interpreter's teardown and run without the cyclic
collector, in the archivist script only, with their exit code, output and atexit hooks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.cli import main
from deployments.quick_exit import QUICK

# Run as a file named `archivist`, as the console script is.
SCRIPT = """
import atexit, gc, sys
from deployments import quick_exit

collector_at_start = gc.isenabled()
atexit.register(lambda: print("hook ran", flush=True))  # registered after quick_exit's
quick_exit.arm(sys.argv[1])
import noisy  # after `arm`, as a command imports what it runs (what arm froze stays to the end)
print(f"collector at start {collector_at_start}, after arm {gc.isenabled()}")
print(f"frozen {gc.get_freeze_count() > 0}, full collections after {gc.get_threshold()[2]}")
print("x" * 100_000)  # more than a pipe's buffer holds before the flush at exit
quick_exit.note_exit(int(sys.argv[2]))
sys.exit(int(sys.argv[2]))
"""


# Beside the script: a module global, released by the teardown only.
NOISY = """
class Noisy:
    def __del__(self):
        print("teardown ran", flush=True)

kept = Noisy()
"""


def run_as(name: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(SCRIPT)
    (tmp_path / "noisy.py").write_text(NOISY)
    root = str(Path(__file__).resolve().parents[2])
    env = os.environ | {"PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=60
    )


@pytest.mark.parametrize("code", [0, 3])
def test_a_quick_command_skips_the_teardown_but_not_its_hooks_nor_its_output(
    tmp_path: Path, code: int
) -> None:
    done = run_as("archivist", tmp_path, "search", str(code))

    assert done.returncode == code, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "collector at start False, after arm False"
    assert lines[2] == "x" * 100_000
    assert lines[3:] == ["hook ran"]  # and no "teardown ran"


def test_another_command_gets_the_collector_back_and_the_usual_exit(tmp_path: Path) -> None:
    done = run_as("archivist", tmp_path, "demo", "0")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "collector at start False, after arm True"
    # what the script loaded is frozen; full collections after 100 middle ones, not 10
    assert lines[1] == "frozen True, full collections after 100"
    assert lines[3:] == ["hook ran", "teardown ran"]


def test_a_process_that_is_not_the_script_is_left_alone(tmp_path: Path) -> None:
    done = run_as("not-archivist.py", tmp_path, "search", "0")

    lines = done.stdout.splitlines()
    assert lines[0] == "collector at start True, after arm True"
    assert lines[1] == "frozen False, full collections after 10"
    assert lines[3:] == ["hook ran", "teardown ran"]


def test_the_quick_commands_are_commands_of_archivist() -> None:
    assert QUICK <= set(main.commands)  # a renamed command would lose its quick exit
