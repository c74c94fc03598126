"""Two versions of the code, one store: the CPU of a search through each, taking turns.

    .venv/bin/python bench/api_ab.py BEFORE_DIR AFTER_DIR [--reuse DIR] [--n 300]
        [--rounds 6]

On a machine shared with other work, two runs of ``bench/api.py`` minutes apart differ by
more than most changes do (the rest of the machine took 16 to 65 of 80 core-seconds here).
This runs ``archivist api --workers 1`` from each of two source trees (``PYTHONPATH`` the
tree; ``BEFORE_DIR`` may be a ``git archive`` of an older commit) on one store built as
``bench/api.py --reuse DIR`` builds it, and sends each query to both, one search at a time
and alternating which goes first, so both see the same load. Per round of ``--n`` queries
it prints the CPU milliseconds per search of each server process and of its PostgreSQL
backends (found by ``application_name``), and at the end the medians and how many answers
were byte-identical (a change meant to keep results keeps them all). The store is migrated
by this tree's code: the older tree must know its migrations (copy a new one into it).
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)  # bench/queue.py: see api.py

import argparse
import json
import os
import signal
import statistics
import subprocess
from dataclasses import dataclass
from http.client import HTTPConnection

import psutil
from sqlalchemy import Engine, text

from bench.api import create_keys, free_port, prepare, wait_healthy
from bench.retrieval import workload

BACKENDS = text("SELECT pid FROM pg_stat_activity WHERE application_name = :name")


@dataclass
class Server:
    """One ``archivist api`` of one source tree, and a kept-alive connection to it."""

    tag: str
    tree: str
    process: subprocess.Popen[bytes]
    http: HTTPConnection

    def search(self, key: str, namespace: str, query: str) -> bytes:
        body = json.dumps({"query": query, "limit": 10})
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.http.request("POST", f"/v1/namespaces/{namespace}/search", body, headers)
        answer = self.http.getresponse()
        data = answer.read()
        if answer.status != 200:
            raise SystemExit(f"{self.tag}: {answer.status} {data[:200]!r}")
        return data


def start(tag: str, tree: str, store: Path) -> Server:
    port = free_port()
    env = dict(os.environ) | {
        "PYTHONPATH": tree,
        "ARCHIVIST_DATA_DIR": str(store),
        "ARCHIVIST_EMBEDDING__PROVIDER": "local",
        "ARCHIVIST_SERVING__ROW_LEVEL_SECURITY": "true",
        "ARCHIVIST_SERVING__POOL_SIZE": "2",
        "PGAPPNAME": f"api-ab-{tag}",  # how its backends are told apart
    }
    log = store / f"api-ab-{tag}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("archivist")), "api", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=sink,
        )
    wait_healthy(f"http://127.0.0.1:{port}", process, log)
    return Server(tag, tree, process, HTTPConnection("127.0.0.1", port, timeout=60))


def cpu_of(pid: int) -> float:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system)


def backends(engine: Engine, tag: str) -> dict[int, float]:
    """CPU seconds so far of each backend of a server."""
    with engine.connect() as conn:
        pids = conn.execute(BACKENDS, {"name": f"api-ab-{tag}"}).scalars().all()
    return {int(pid): cpu_of(int(pid)) for pid in pids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--reuse", type=Path, default=Path("/tmp/archivist-bench-api"))
    parser.add_argument("--n", type=int, default=300, help="queries per round")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"
    store = args.reuse.resolve()
    store.mkdir(parents=True, exist_ok=True)
    engine, by_ns = prepare(store, 100_000, "local")
    work = workload(by_ns, 2000)
    keys = create_keys(engine, {ns for ns, _ in work})
    servers = [start("A", args.before, store), start("B", args.after, store)]
    per: dict[str, dict[str, list[float]]] = {s.tag: {"server": [], "pg": []} for s in servers}
    same = 0
    try:
        for i in range(150):  # warm-up: the graph, the pools, prepared statements
            for server in servers:
                server.search(keys[work[i][0]], *work[i])
        offset = 150
        for n in range(args.rounds):
            before = {s.tag: (cpu_of(s.process.pid), backends(engine, s.tag)) for s in servers}
            for i in range(args.n):
                ns, query = work[(offset + i) % len(work)]
                order = servers if i % 2 == 0 else servers[::-1]
                answers = {s.tag: s.search(keys[ns], ns, query) for s in order}
                same += answers["A"] == answers["B"]
            offset += args.n
            line = [f"round {n}: load {os.getloadavg()[0]:.1f}"]
            for s in servers:
                server_cpu, pg_before = before[s.tag]
                pg = sum(v - pg_before.get(pid, 0.0) for pid, v in backends(engine, s.tag).items())
                ms = 1000 * (cpu_of(s.process.pid) - server_cpu) / args.n, 1000 * pg / args.n
                per[s.tag]["server"].append(ms[0])
                per[s.tag]["pg"].append(ms[1])
                line.append(f"{s.tag}: server {ms[0]:.2f} pg {ms[1]:.2f} sum {sum(ms):.2f}")
            print("  ".join(line), flush=True)
    finally:
        for s in servers:
            s.process.send_signal(signal.SIGTERM)
            s.process.wait(timeout=30)
    for s in servers:
        server_ms = statistics.median(per[s.tag]["server"])
        pg_ms = statistics.median(per[s.tag]["pg"])
        print(
            f"{s.tag} ({s.tree}) median CPU ms per search: server {server_ms:.2f}, "
            f"PostgreSQL {pg_ms:.2f}, both {server_ms + pg_ms:.2f}"
        )
    print(f"identical answers: {same} of {args.n * args.rounds}")


if __name__ == "__main__":
    main()
