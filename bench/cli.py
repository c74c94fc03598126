"""Whole-process wall time of the one-shot commands a person types: search, prime, status.

    .venv/bin/python bench/cli.py [--data-dir DIR] [--runs 5] [--keep]

Each command runs as its own process, as typed in a terminal (the ``archivist`` script
beside this Python), once untimed (the warm-up: the query graph built into its cache, the
servers up, the files in the page cache), then ``--runs`` times; printed per command: the
best, median and worst wall time, and the CPU seconds of the process and its children for
the best run. The goal is a best under 1 s on a quiet machine; the load average before and
after is printed beside the figures, since this machine is shared.

The data is the demo's (``archivist demo``, 2 to 4 minutes), in ``--data-dir DIR`` (made
there once and reused while ``DIR/pgdata`` exists) or else in a temp dir deleted at the
end, with a Prefect home, a Prefect port and a graph cache of its own
(``ARCHIVIST_DATA_DIR``, ``PREFECT_HOME``, ``PREFECT_SERVER_API_PORT``,
``ARCHIVIST_EMBEDDING__GRAPH_CACHE_DIR``). The Prefect server the demo leaves running stays
up through the timings, as after the README's first command, so ``status`` finds an API
that answers; the bench stops it and the embedded PostgreSQL at the end unless ``--keep``.
As in a person's terminal, ``PYTHONDONTWRITEBYTECODE`` is left out of the commands'
environment (with it, every process compiles the modules it imports again: 1 to 2.5 s
here), and ``XDG_RUNTIME_DIR`` is set when it is not (``DIR/run``): the embedded server's
start/stop lock lives there, else in ``/tmp``, shared with every process on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

COMMANDS: dict[str, list[str]] = {
    "--version (the floor)": ["--version"],
    'search alice "what did we plan?"': ["search", "alice", "what did we plan?"],
    'prime alice "Hi again!"': ["prime", "alice", "Hi again!"],
    "status": ["status"],
}
GOAL_S = 1.0


@dataclass(frozen=True)
class Timing:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and its children


def archivist() -> str:
    beside = Path(sys.executable).parent / "archivist"
    found = str(beside) if beside.is_file() else shutil.which("archivist")
    if found is None:
        raise SystemExit("no archivist script beside this Python or on PATH: pip install -e .")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment(data_dir: Path) -> dict[str, str]:
    """This environment with the demo's data, Prefect home and graph cache in ``data_dir``,
    and the Prefect port the data dir was given the first time (kept in a file there)."""
    port_file = data_dir / "bench-cli-port"
    if not port_file.is_file():
        data_dir.mkdir(parents=True, exist_ok=True)
        port_file.write_text(str(free_port()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCHIVIST_", "PREFECT_"))}
    # A person's terminal lets Python keep the bytecode it compiles (uv installs none);
    # with this set (as in some containers) every command compiles its imports again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not env.get("XDG_RUNTIME_DIR"):
        # As in a desktop session: the embedded server's lock file there, not the one in
        # /tmp that every process of the machine starting or stopping one takes.
        runtime = data_dir / "run"
        (runtime / "python_PostgresServer").mkdir(parents=True, exist_ok=True)
        runtime.chmod(0o700)  # else platformdirs falls back to /tmp/runtime-<uid>
        env["XDG_RUNTIME_DIR"] = str(runtime)
    env.update(
        ARCHIVIST_DATA_DIR=str(data_dir),
        ARCHIVIST_EMBEDDING__GRAPH_CACHE_DIR=str(data_dir / "graphs"),
        PREFECT_HOME=str(data_dir / "prefect"),
        PREFECT_SERVER_API_PORT=port_file.read_text().strip(),
    )
    return env


def run(command: list[str], env: dict[str, str], cwd: Path) -> Timing:
    """One whole process: wall time from fork to exit, and its CPU with its children's."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return Timing(wall, cpu)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help="the demo's data here, made once and kept")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command")
    parser.add_argument("--keep", action="store_true", help="leave the servers running")
    args = parser.parse_args()
    temp = None
    if args.data_dir is None:
        data_dir = temp = Path(tempfile.mkdtemp(prefix="archivist-bench-cli-"))
    else:
        data_dir = Path(args.data_dir).resolve()
    env, script = environment(data_dir), archivist()
    # A folder of its own: project settings files of the current folder (.env, prefect.toml)
    # would reach the commands otherwise.
    cwd = data_dir
    try:
        if not (data_dir / "pgdata").is_dir():
            print(f"making the demo's data in {data_dir} (archivist demo)...", flush=True)
            started = time.perf_counter()
            run([script, "demo"], env, cwd)
            print(f"  done in {time.perf_counter() - started:.0f} s", flush=True)
        print(f"{script}, data in {data_dir}; {load()}")
        print(f"{'command':<36} {'best':>7} {'median':>7} {'worst':>7} {'cpu(best)':>9}")
        for label, arguments in COMMANDS.items():
            run([script, *arguments], env, cwd)  # the warm-up
            timings = [run([script, *arguments], env, cwd) for _ in range(args.runs)]
            best = min(timings, key=lambda t: t.wall)
            walls = [t.wall for t in timings]
            mark = "" if label.startswith("--") or best.wall < GOAL_S else f"  (goal {GOAL_S:g} s)"
            print(
                f"{label:<36} {best.wall:>6.2f}s {statistics.median(walls):>6.2f}s "
                f"{max(walls):>6.2f}s {best.cpu:>8.2f}s{mark}",
                flush=True,
            )
        print(f"after: {load()}")
    finally:
        if not args.keep:
            for stop in (["prefect", "stop"], ["db", "stop"]):
                subprocess.run([script, *stop], env=env, cwd=cwd, capture_output=True, check=False)
        if temp is not None and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
