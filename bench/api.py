"""Load benchmark of the HTTP API: concurrent clients searching over loopback.

    .venv/bin/python bench/api.py [--memories 100000] [--clients 16] [--seconds 30]
        [--warmup 5] [--rate 300] [--embedder local|hashing] [--workers N] [--rls on,off]
        [--reuse DIR]

Builds the store of bench/retrieval.py (memories over synthetic chat text in 1,000
Zipf-sized namespaces, the large ones in the HNSW index) in a temp dir deleted at the end,
or in ``--reuse DIR``: kept, and reused as it is once it holds a finished build of the same
size and embedder (embedding 100,000 texts with the local model takes 5 to 15 minutes
here). One key per namespace the queries touch. Then, once per row-level security setting,
``archivist api --workers N`` (default: the machine's cores, at most 4; the processes
share the API's pool) runs as a subprocess on a free loopback port (``ARCHIVIST_*`` variables
of this environment pass through to it), and ``--clients`` threads, each with its own
kept-alive ``http.client`` connection, search one request at a time over the queries of
``bench.retrieval.workload`` (each thread from its own offset), in two phases:

- saturation: each client sends its next search as soon as the last is answered, which
  measures the most searches/s the machine serves. Its latency is mostly queueing: with
  the 16 clients always waiting, the mean latency is 16 / throughput (Little's law);
- ``--rate`` searches/s offered (0: skip), each client one search every
  ``clients / rate`` s, latency counted from when the search was due: the latency at
  that load.

Each phase: untimed until every client has had its first answer (the first searches load
the embedder), then ``--warmup`` seconds; timed: ``--seconds``. Printed per phase:
searches/s answered in the timed window, p50/p95/p99 of those sent and answered in it,
errors (non-200, failed requests) apart; the CPU seconds meanwhile of the server,
PostgreSQL (exited backends included), this client and the rest of the machine, and the
connections PostgreSQL opened; finally RLS on vs off.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module: put the repository root there instead (bench.retrieval).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import atexit
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException
from urllib.parse import urlsplit

import httpx
import psutil
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from bench.retrieval import load, namespace_sizes, workload
from storage.embedding import make_embedder
from storage.kernel.settings import EmbeddingSettings, Settings
from storage.keys import create_key
from storage.server.engine import open_store
from storage.server.migrate import upgrade
from tasks.ann_index import refresh_ann_index

MARKER = "bench-api.json"  # written once a build has finished: what --reuse looks for
CONTENTS = text("SELECT namespace, content FROM memories ORDER BY id")
OLD_KEYS = text("DELETE FROM api_keys WHERE label = 'bench'")
SESSIONS = text("SELECT sum(sessions) FROM pg_stat_database")  # connections opened so far
# Issue 35: 300 searches/s on 2 cores, p95 under 60 ms, at most 6 ms of CPU per search
# (the server's and PostgreSQL's).
TARGET_RPS, TARGET_P95_MS, TARGET_CPU_MS = 300.0, 60.0, 6.0
Work = list[tuple[str, str]]  # (namespace, query)
SET_HERE = (
    "ARCHIVIST_DATA_DIR",
    "ARCHIVIST_EMBEDDING__PROVIDER",
    "ARCHIVIST_SERVING__ROW_LEVEL_SECURITY",
)


def prepare(workdir: Path, size: int, provider: str) -> tuple[Engine, dict[str, list[str]]]:
    """The migrated store of ``size`` memories in ``workdir``, and each namespace's texts."""
    wanted = {"memories": size, "embedder": provider}
    marker = workdir / MARKER
    if not marker.exists() and any(workdir.iterdir()):
        raise SystemExit(f"{workdir} holds no finished build ({MARKER}); delete it or pick another")
    settings = Settings(data_dir=workdir, embedding=EmbeddingSettings(provider=provider))
    store = open_store(settings)
    upgrade(store.engine, settings)  # a reused dir may predate a migration
    if marker.exists():
        if (found := json.loads(marker.read_text())) != wanted:
            raise SystemExit(f"--reuse {workdir} holds {found}, not {wanted}")
        by_ns: dict[str, list[str]] = {}
        with store.engine.connect() as conn:
            for ns, content in conn.execute(CONTENTS):
                by_ns.setdefault(ns, []).append(content)
        print(f"reusing {workdir}: {size:,} memories, {provider} embedder")
        return store.engine, by_ns
    started = time.perf_counter()
    by_ns = load(store.engine, namespace_sizes(size), make_embedder(settings.embedding))
    indexed = refresh_ann_index(store.engine, settings.retrieval.ann_min_namespace_rows)
    marker.write_text(json.dumps(wanted))
    print(
        f"built {size:,} memories in {len(by_ns)} namespaces ({provider} embedder, HNSW for "
        f"{len(indexed)} namespaces) in {time.perf_counter() - started:.0f} s in {workdir}"
    )
    return store.engine, by_ns


def create_keys(engine: Engine, namespaces: set[str]) -> dict[str, str]:
    """One new key per namespace; a reused dir's earlier ones are dropped (shown once, they
    are lost anyway), so the key table holds as many as a fresh build's."""
    with Session(engine) as session, session.begin():
        session.execute(OLD_KEYS)
        return {ns: create_key(session, ns, label="bench")[1] for ns in sorted(namespaces)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def api_server(
    workdir: Path, provider: str, *, rls: bool, workers: int
) -> Iterator[tuple[str, psutil.Process, dict[str, object]]]:
    """``archivist api`` as a subprocess; yields its URL, process and health answer."""
    port = free_port()
    env = dict(os.environ) | dict(
        zip(SET_HERE, (str(workdir), provider, str(rls).lower()), strict=True)
    )
    archivist = str(Path(sys.executable).with_name("archivist"))
    log_path = workdir / f"api-{'rls' if rls else 'owner'}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [archivist, "api", "--port", str(port), "--workers", str(workers)],
            env=env,
            stdout=log,
            stderr=log,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        yield url, psutil.Process(process.pid), wait_healthy(url, process, log_path)
    finally:
        process.send_signal(signal.SIGTERM)  # a normal exit: it detaches from PostgreSQL
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> dict[str, object]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"archivist api exited {process.returncode}:\n{log.read_text()}")
        try:
            answer = httpx.get(f"{url}/v1/health", timeout=5)
            if answer.status_code == 200:
                return dict(answer.json())
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"archivist api not healthy after 120 s:\n{log.read_text()}")


@dataclass
class Samples:
    """What one client thread saw: (sent at, answered at, status; 0 = no answer)."""

    done: list[tuple[float, float, int]] = field(default_factory=list)
    first_error: str = ""
    answered: threading.Event = field(default_factory=threading.Event)  # its first answer


def client(
    url: str,
    keys: dict[str, str],
    work: Work,
    offset: int,
    stop: threading.Event,
    samples: Samples,
    interval: float | None,
) -> None:
    """Search in a loop until ``stop``, one request at a time, from ``work[offset]`` on.

    ``interval`` None: the next request as soon as the answer is in (closed loop). Else one
    request every ``interval`` s, each one's latency counted from when it was due: a slow
    answer delays the requests after it, and their wait counts (no coordinated omission).
    A plain ``http.client`` connection, kept alive: the client shares the server's cores.
    """
    where = urlsplit(url)
    http = HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=60)
    i = offset
    due = time.perf_counter() + (0.0 if interval is None else interval * offset / len(work))
    while not stop.is_set():
        ns, query = work[i % len(work)]
        i += 1
        if interval is None:
            started = time.perf_counter()
        else:
            started, due = due, due + interval
            time.sleep(max(0.0, started - time.perf_counter()))
        body = json.dumps({"query": query, "limit": 10})
        headers = {"Authorization": f"Bearer {keys[ns]}", "Content-Type": "application/json"}
        try:
            http.request("POST", f"/v1/namespaces/{ns}/search", body=body, headers=headers)
            answer = http.getresponse()
            text = answer.read()
            status = answer.status
            if status != 200 and not samples.first_error:
                samples.first_error = f"{status} {text[:200]!r}"
        except (OSError, HTTPException) as exc:
            status = 0
            http.close()  # the next request connects again
            samples.first_error = samples.first_error or f"{type(exc).__name__}: {exc}"
        samples.done.append((started, time.perf_counter(), status))
        samples.answered.set()
    http.close()


def cpu_seconds(processes: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for p in processes:
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        out[p.pid] = times.user + times.system
    return out


def tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@dataclass
class Meter:
    """CPU seconds of the server's processes, PostgreSQL's (its exited backends included),
    this client's and the machine's; and the connections PostgreSQL has opened."""

    server: psutil.Process
    postgres: psutil.Process
    engine: Engine
    me: psutil.Process = field(default_factory=psutil.Process)

    def read(self) -> dict[str, float]:
        pg = cpu_seconds(tree(self.postgres))
        exited = self.postgres.cpu_times()  # children_*: the backends it has reaped
        server = cpu_seconds([p for p in tree(self.server) if p.pid not in pg])
        machine = psutil.cpu_times()
        with self.engine.connect() as conn:
            sessions = conn.execute(SESSIONS).scalar_one()
        return {
            **{f"server:{pid}": s for pid, s in server.items()},
            **{f"pg:{pid}": s for pid, s in pg.items()},
            "pg:exited": exited.children_user + exited.children_system,
            "client": sum(self.me.cpu_times()[:2]),
            "busy": sum(machine) - machine.idle - getattr(machine, "iowait", 0.0),
            "sessions": float(sessions),
        }

    @staticmethod
    def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        """Per part; a backend alive before and gone after moved into ``pg:exited``."""
        out: dict[str, float] = {}
        for sign, snapshot in ((-1, before), (1, after)):
            for key, value in snapshot.items():
                part = key.split(":")[0]
                out[part] = out.get(part, 0.0) + sign * value
        return out


@dataclass(frozen=True)
class Result:
    rps: float
    p95: float
    text: str


def drive(
    url: str,
    keys: dict[str, str],
    work: Work,
    meter: Meter,
    args: argparse.Namespace,
    rate: float | None,
) -> Result:
    """Untimed until every client has had an answer, then ``args.warmup`` s; then timed.
    ``rate``: searches/s offered by all clients together (None: as fast as answered)."""
    begin = time.perf_counter()
    results = [Samples() for _ in range(args.clients)]
    stop = threading.Event()
    offsets = [n * len(work) // args.clients for n in range(args.clients)]
    interval = None if rate is None else args.clients / rate
    threads = [
        threading.Thread(target=client, args=(url, keys, work, offset, stop, samples, interval))
        for offset, samples in zip(offsets, results, strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        if not all(samples.answered.wait(timeout=300) for samples in results):
            raise SystemExit("a client had no answer in 300 s")
        cold = time.perf_counter() - begin
        time.sleep(args.warmup)
        t0, before = time.perf_counter(), meter.read()
        time.sleep(args.seconds)
        t1, after = time.perf_counter(), meter.read()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return summarize(results, (cold, t0, t1), Meter.spent(before, after))


def summarize(
    results: list[Samples], times: tuple[float, float, float], spent: dict[str, float]
) -> Result:
    """Throughput: answers received in [t0, t1]; latency: searches sent and answered in it."""
    cold, t0, t1 = times
    done = [s for r in results for s in r.done]
    seconds = t1 - t0
    rps = sum(1 for _, end, status in done if t0 <= end <= t1 and status == 200) / seconds
    timed = [(1000 * (end - sent), status) for sent, end, status in done if t0 <= sent < end <= t1]
    ok = sorted(ms for ms, status in timed if status == 200)
    if len(ok) < 2:
        raise SystemExit(f"{len(ok)} searches answered: {[r.first_error for r in results]}")
    q = statistics.quantiles(ok, n=100)
    first = next((r.first_error for r in results if r.first_error), "")
    errors = f"{len(timed) - len(ok)} errors" + (f" (first: {first})" if first else "")
    slowest_first = max(1000 * (r.done[0][1] - r.done[0][0]) for r in results)
    untimed = sum(1 for sent, _, _ in done if sent < t0)
    rest = spent["busy"] - spent["server"] - spent["pg"] - spent["client"]
    per = {part: 1000 * spent[part] / (rps * seconds) for part in ("server", "pg", "client")}
    lines = [
        f"untimed: every client had its first answer after {cold:.1f} s (slowest "
        f"{slowest_first:,.0f} ms), then the warm-up; {untimed:,} searches in all",
        f"search {rps:7.1f} req/s  p50 {q[49]:6.2f} ms  p95 {q[94]:6.2f} ms  "
        f"p99 {q[98]:6.2f} ms  ({len(ok):,} sent and answered in {seconds:.1f} s, {errors})",
        f"CPU s in those {seconds:.1f} s ({(psutil.cpu_count() or 1) * seconds:.0f} core-s): "
        f"server {spent['server']:.1f}, PostgreSQL {spent['pg']:.1f} ({spent['sessions']:.0f} "
        f"connections opened), client {spent['client']:.1f} "
        f"({spent['client'] / max(spent['busy'], 1e-9):.0%} of busy), rest of machine "
        f"{rest:.1f}; busy {spent['busy']:.1f}",
        f"CPU ms per search: server {per['server']:.2f}, PostgreSQL {per['pg']:.2f}, "
        f"client {per['client']:.2f}; server and PostgreSQL {per['server'] + per['pg']:.2f} "
        f"(target <= {TARGET_CPU_MS:g})",
    ]
    return Result(rps, q[94], "\n".join(lines))


def postmaster(workdir: Path) -> psutil.Process:
    pid_file = workdir / "pgdata" / "postmaster.pid"
    return psutil.Process(int(pid_file.read_text().split()[0]))


def one_run(
    setting: str,
    workdir: Path,
    engine: Engine,
    keys: dict[str, str],
    work: Work,
    args: argparse.Namespace,
) -> tuple[Result, Result | None]:
    """Saturation (closed loop), then ``args.rate`` searches/s offered, on one server."""
    with api_server(workdir, args.embedder, rls=setting == "on", workers=args.workers) as started:
        url, server, health = started
        print(
            f"\n== RLS {setting} (role {health['role']}), {args.workers} worker(s), "
            f"{health['embedder']}, {args.clients} clients, {args.warmup:g} s warm-up, "
            f"{args.seconds:g} s timed; load average before {os.getloadavg()[0]:.2f}"
        )
        meter = Meter(server, postmaster(workdir), engine)
        print("-- saturation: each client sends its next search when the last is answered")
        saturated = drive(url, keys, work, meter, args, None)
        print(saturated.text)
        paced = None
        if args.rate > 0:
            print(
                f"-- {args.rate:g} searches/s offered, each client one every "
                f"{1000 * args.clients / args.rate:.0f} ms; latency from when it was due"
            )
            paced = drive(url, keys, work, meter, args, args.rate)
            print(paced.text)
    met = (
        saturated.rps >= TARGET_RPS
        and paced is not None
        and paced.rps >= 0.97 * args.rate  # it kept up with the offered rate
        and paced.p95 <= TARGET_P95_MS
    )
    print(
        f"target >= {TARGET_RPS:g} req/s at saturation, p95 <= {TARGET_P95_MS:g} ms at "
        f"{TARGET_RPS:g}/s offered: {'met' if met else 'missed'}"
    )
    return saturated, paced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0, help="after the first answers")
    parser.add_argument("--queries", type=int, default=2000, help="distinct (ns, query) pairs")
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument(
        "--workers",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="archivist api --workers [default: the machine's cores, at most 4]",
    )
    parser.add_argument("--rls", choices=["on,off", "off,on", "on", "off"], default="on,off")
    parser.add_argument("--reuse", type=Path, help="build in DIR and keep it; reuse if built")
    parser.add_argument(
        "--rate",
        type=float,
        default=TARGET_RPS,
        help="searches/s offered after saturation (0: skip)",
    )
    args = parser.parse_args()
    for own in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_SERVING__DATABASE_URL", *SET_HERE):
        os.environ.pop(own, None)  # the embedded server in the work dir, and this run's values
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    if args.reuse is None:
        workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-api-"))
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)  # after PostgreSQL stops
    else:
        workdir = args.reuse.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    engine, by_ns = prepare(workdir, args.memories, args.embedder)
    work = workload(by_ns, args.queries)
    keys = create_keys(engine, {ns for ns, _ in work})
    print(f"{len(work):,} queries over {len(keys)} namespaces, one key each")
    if passed := sorted(k for k in os.environ if k.startswith("ARCHIVIST_")):
        print("passed to the server: " + ", ".join(f"{k}={os.environ[k]}" for k in passed))
    results = {s: one_run(s, workdir, engine, keys, work, args) for s in args.rls.split(",")}
    if {"on", "off"} <= results.keys():
        (on, on_paced), (off, off_paced) = results["on"], results["off"]
        print(
            f"\nRLS on vs off at saturation: {on.rps:.1f} vs {off.rps:.1f} req/s "
            f"({on.rps / off.rps - 1:+.0%}), p95 {on.p95:.2f} vs {off.p95:.2f} ms"
        )
        if on_paced is not None and off_paced is not None:
            print(
                f"RLS on vs off at {args.rate:g}/s offered: p95 {on_paced.p95:.2f} vs "
                f"{off_paced.p95:.2f} ms"
            )


if __name__ == "__main__":
    main()
