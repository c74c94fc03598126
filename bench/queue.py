"""Benchmark of the write queue: enqueue and drain throughput, enqueue-to-searchable latency.

    .venv/bin/python bench/queue.py [--items 10000] [--samples 200] [--claim-batch 20]

Runs on a throw-away embedded PostgreSQL (deleted at the end unless ``--keep``) with the
offline embedder. Drains 10,000
ADD_MEMORY items with one drainer, then another 10,000 with four (threads, each with its
own connections); then a continuous worker (``run_worker``) runs while single items are
enqueued and committed one at a time, and each is searched for until found.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on the path, and its name would shadow
# the standard library's queue module (which psycopg imports).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import atexit
import os
import shutil
import statistics
import tempfile
import threading
import time
import uuid

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.embedding import Embedder
from storage.kernel.settings import Settings
from storage.queue import table as queue
from storage.retrieval import Retriever
from tasks.queue import DrainReport, drain_once, run_worker

WORDS = "trip lisbon dentist window seat budget flight hotel dinner passport train meeting".split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--claim-batch", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-queue-"))
    if not args.keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    os.environ["ARCHIVIST_DATA_DIR"] = str(workdir)
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    if args.claim_batch:
        os.environ["ARCHIVIST_QUEUE__CLAIM_BATCH"] = str(args.claim_batch)

    from storage.embedding import make_embedder
    from storage.server.engine import open_store
    from storage.server.migrate import upgrade

    settings = Settings()
    store = open_store(settings)
    upgrade(store.engine, settings)
    embedder = make_embedder(settings.embedding, store.engine)
    print(f"claim batch {settings.queue.claim_batch}, embedder {embedder.name}")

    seconds = enqueue_items(store.engine, args.items, "one")
    print(f"enqueue: {args.items:,} items in {seconds:.2f} s ({args.items / seconds:,.0f} items/s)")
    for drainers, tag in ((1, "one"), (4, "four")):
        if tag != "one":
            enqueue_items(store.engine, args.items, tag)
        report, seconds = drain(store.engine, embedder, settings, drainers)
        print(
            f"drain, {drainers} drainer(s): {report.completed:,} items in {seconds:.2f} s "
            f"({report.completed / seconds:,.0f} items/s, {report.batches} batches)"
        )
    latencies = latency(store.engine, embedder, settings, args.samples)
    p50, p95 = (
        statistics.quantiles(latencies, n=100)[49],
        statistics.quantiles(latencies, n=100)[94],
    )
    print(
        f"enqueue-to-searchable ({len(latencies)} samples, continuous worker): "
        f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms"
    )
    print(f"data dir: {workdir}")


def enqueue_items(engine: Engine, count: int, tag: str) -> float:
    """Enqueue ``count`` ADD_MEMORY items over 100 namespaces, 500 per transaction."""
    started = time.perf_counter()
    for start in range(0, count, 500):
        with Session(engine) as session, session.begin():
            for n in range(start, min(count, start + 500)):
                content = f"{tag} {n}: " + " ".join(WORDS[(n + k) % len(WORDS)] for k in range(12))
                queue.enqueue(session, f"user-{n % 100}", "ADD_MEMORY", {"content": content})
    return time.perf_counter() - started


def drain(
    engine: Engine, embedder: Embedder, settings: Settings, drainers: int
) -> tuple[DrainReport, float]:
    """Drain everything due with ``drainers`` threads; returns the merged report and seconds."""
    total, lock = DrainReport(), threading.Lock()

    def run(name: str) -> None:
        report = drain_once(engine, embedder, settings, name)
        with lock:
            total.merge(report)

    threads = [threading.Thread(target=run, args=(f"bench-{n}",)) for n in range(drainers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return total, time.perf_counter() - started


def latency(engine: Engine, embedder: Embedder, settings: Settings, samples: int) -> list[float]:
    """Seconds from committing an enqueue to the memory being found by search."""
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker, args=(engine, embedder, settings), kwargs={"stop": stop}
    )
    worker.start()
    retriever = Retriever(engine, embedder, settings.retrieval, settings.tz)
    out: list[float] = []
    try:
        time.sleep(0.5)
        for _ in range(samples):
            token = f"tok{uuid.uuid4().hex[:12]}"
            started = time.perf_counter()
            with Session(engine) as session, session.begin():
                queue.enqueue(session, "live", "ADD_MEMORY", {"content": f"note {token} here"})
            while not any(
                token in hit.content
                for hit in retriever.search("live", token, limit=3, record_access=False)
            ):
                time.sleep(0.002)
            out.append(time.perf_counter() - started)
    finally:
        stop.set()
        worker.join()
    return out


if __name__ == "__main__":
    main()
