"""Wall and CPU time of the test suite, per directory, with every process counted.

    .venv/bin/python bench/suite.py [--out FILE.json] [PYTEST ARGS...]

Runs ``python -m pytest PYTEST ARGS`` (default: the whole suite, as the README's second
command does) as the child of a process that adopts orphans (``PR_SET_CHILD_SUBREAPER``),
so the CPU of the processes that outlive their parent counts too: the embedded
PostgreSQL (``pg_ctl`` starts it and exits), its backends, the Prefect test server, the
CLI and API processes the tests start. Inside pytest this module is also a plugin
(``-p bench.suite``) that reads the CPU of the whole process tree at every test boundary
and charges the difference to the test's directory (``tests/storage``, ``tests/tasks``,
...; the first test of a directory carries the session fixtures it is the first to use).

Printed at the end: per directory the tests, wall seconds and CPU seconds (user+sys of
all processes), the 15 tests that cost the most CPU (setup, call and teardown, with every
process they started), the collection phase, the total beside ``getrusage(RUSAGE_CHILDREN)`` of
the whole run, and the load average before and after, since this machine is shared.
Under pytest-xdist (``-n N``, as the README's command runs the tests) several directories
run at once, so only the total is kept: for the figures per directory and per test, pass
``-n 0``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

PR_SET_CHILD_SUBREAPER = 36
TICK = os.sysconf("SC_CLK_TCK")
ROOT_ENV = "SUITE_BENCH_ROOT_PID"  # not ARCHIVIST_*: the CLI warns of those it does not know
OUT_ENV = "SUITE_BENCH_OUT"


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every process below it, live or reaped.

    Each live process counts its own time plus that of the children it reaped, so every
    process is counted once: reaped ones through the parent that waited for them.
    """
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(value) for value in fields[11:15])
    below: set[int] = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in below and pid not in below:
                below.add(pid)
                grew = True
    return sum(times.get(pid, 0) for pid in below) / TICK


def _directory(nodeid: str) -> str:
    parts = nodeid.split("::")[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else "tests/*.py"


class _Meter:
    def __init__(self, root: int) -> None:
        self.root = root
        self.last_wall = time.monotonic()
        self.last_cpu = tree_cpu(root)
        self.rows: dict[str, dict[str, float]] = defaultdict(
            lambda: {"tests": 0.0, "wall": 0.0, "cpu": 0.0}
        )
        self.tests: dict[str, dict[str, float]] = {}
        self.phases: dict[str, dict[str, float]] = defaultdict(dict)

    def charge(self, key: str, *, test: bool, nodeid: str | None = None) -> None:
        wall, cpu = time.monotonic(), tree_cpu(self.root)
        row = self.rows[key]
        row["wall"] += wall - self.last_wall
        row["cpu"] += cpu - self.last_cpu
        row["tests"] += 1 if test else 0
        if nodeid is not None:
            phases = self.phases.pop(nodeid, {})
            self.tests[nodeid] = {"wall": wall - self.last_wall, "cpu": cpu - self.last_cpu}
            self.tests[nodeid].update(phases)
        self.last_wall, self.last_cpu = wall, cpu


PARALLEL = "(all, in parallel)"
_meter: _Meter | None = None
_parallel = False


def pytest_sessionstart(session: Any) -> None:
    global _meter, _parallel
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker of pytest-xdist: the controller measures
    # Under pytest-xdist (-n N) tests of several directories run at once: the CPU between
    # two test ends is no one directory's. Then only the total is kept; per directory and
    # per test, run with -n 0.
    _parallel = session.config.pluginmanager.has_plugin("dsession")
    root = int(os.environ.get(ROOT_ENV, os.getpid()))
    _meter = _Meter(root)


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _meter is not None and not _meter.rows:
        _meter.charge("(collection)", test=False)


def _phase(item: Any, name: str) -> Any:
    """CPU of one phase of a test (``setup``: its fixtures; ``call``; ``teardown``)."""
    before = tree_cpu(_meter.root) if _meter is not None and not _parallel else None
    yield
    if before is not None and _meter is not None:
        _meter.phases[item.nodeid][name] = tree_cpu(_meter.root) - before


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: Any) -> Any:
    yield from _phase(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    yield from _phase(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: Any) -> Any:
    yield from _phase(item, "teardown")


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _meter is not None:
        if _parallel:
            _meter.charge(PARALLEL, test=True)
        else:
            _meter.charge(_directory(nodeid), test=True, nodeid=nodeid)
        _write(_meter)


def pytest_sessionfinish(session: Any) -> None:
    if _meter is not None:
        _meter.charge("(session end)", test=False)
        _write(_meter)


def _write(meter: _Meter) -> None:
    """The figures so far (after every test: an interrupted run still leaves them)."""
    out = os.environ.get(OUT_ENV)
    if out:
        Path(out).write_text(json.dumps({"directories": meter.rows, "tests": meter.tests}))


def _give_up(signum: int, frame: object) -> None:
    raise ChildProcessError("orphans still running a minute after pytest ended")


def _reap_until(process: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for the child and for every orphan handed to us; the child's exit code and the
    time it ended (``time.monotonic``)."""
    code: int | None = None
    ended = 0.0
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == process.pid:
            code = os.waitstatus_to_exitcode(status)
            process.returncode, ended = code, time.monotonic()
            # Orphans still running (a server left behind) are not waited for forever.
            signal.alarm(60)
    signal.alarm(0)
    return (code if code is not None else 1), ended


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("suite-times.json"))
    known, pytest_args = parser.parse_known_args()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    signal.signal(signal.SIGALRM, _give_up)
    load_before = os.getloadavg()
    env = {**os.environ, ROOT_ENV: str(os.getpid()), OUT_ENV: str(known.out.resolve())}
    here = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(here), env.get("PYTHONPATH")]))
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "bench.suite", *pytest_args], env=env
    )
    code, ended = _reap_until(process)
    wall, orphans = ended - started, time.monotonic() - ended
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = os.getloadavg()
    saved = json.loads(known.out.read_text()) if known.out.exists() else {}
    rows, tests = saved.get("directories", {}), saved.get("tests", {})
    print(f"\n{'directory':<22}{'tests':>7}{'wall s':>9}{'cpu s':>9}")
    for key, row in sorted(rows.items(), key=lambda item: -item[1]["wall"]):
        print(f"{key:<22}{int(row['tests']):>7}{row['wall']:>9.1f}{row['cpu']:>9.1f}")
    rest = wall - sum(row["wall"] for row in rows.values())
    print(f"{'(start, imports, exit)':<22}{'':>7}{rest:>9.1f}")
    print(
        f"{'total':<22}{sum(int(r['tests']) for r in rows.values()):>7}{wall:>9.1f}"
        f"{usage.ru_utime + usage.ru_stime:>9.1f}"
        f"   (user {usage.ru_utime:.1f} s, sys {usage.ru_stime:.1f} s, all processes)"
    )
    print(f"\n{'the 15 tests that cost the most CPU':<70}{'wall s':>9}{'cpu s':>9}")
    for nodeid, test in sorted(tests.items(), key=lambda item: -item[1]["cpu"])[:15]:
        name = nodeid if len(nodeid) <= 68 else nodeid[:31] + "..." + nodeid[-34:]
        print(f"{name:<70}{test['wall']:>9.1f}{test['cpu']:>9.1f}")
    print(f"pytest's own wall time {wall:.1f} s; processes it left ran {orphans:.1f} s more")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*load_before))
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*load_after))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
