"""Benchmark at scale: 1,000,000 memories in 10,000 namespaces beside 100,000 in 1,000.

    .venv/bin/python bench/scale.py [--memories 1000000] [--namespaces 10000]
        [--chunks-per-memory 0.2] [--queries 400] [--tcp] [--reuse DIR]
        [--skip-nightly] [--only small|large] [--extra-indexes N]

Builds two stores in one server, each in a database of its own: the large one
(``--memories`` in ``--namespaces``) and a smaller one, a tenth of both (so 100,000 memories
in 1,000 namespaces by default: the same shape, a separate store, not a prefix of the
large one). How a store is made: ``bench/scaling/build.py`` (Zipf-sized namespaces,
kinds, tiers and dates over a year, hashing vectors plus a semantic subset embedded by
the local model, document chunks, the HNSW indexes). The build is resumable: with
``--reuse DIR`` a run goes on from where the last one in DIR stopped, and a finished
store is measured again without being rebuilt; without it, DIR is a new temporary
folder, kept (the stores are expensive) and printed.

Then for each store, smaller first, after warming the server as one that has been serving
(other queries of the same uniform and size-weighted picks, each searched and primed
once: a server just started reads its HNSW indexes page by page from the OS cache, which
doubled the size-weighted p95 at a million memories): search p50/p95/p99 with the query's
vector computed beforehand (the embedding's own cost printed apart, hashing and the local
model), over namespaces picked uniformly and in proportion to their size; priming (with a first
message) the same way; document-chunk-only search over the namespaces with documents;
each of these with its CPU per query (the bench process's, and over TCP the server's);
planning time on ``memories``; the catalog (pg_class rows, indexes) and table and index
sizes; ``archivist status`` as a process; a plain VACUUM of memories and chunks. Then on a
copy of the store (dropped after): the day's sync of one new session per namespace as
``memory-sharded-run`` with 2 shards on 2 process workers of a temporary Prefect server
(hashing embedder), then ageing (decay, compression, archival) and VACUUM again.

``--tcp``: the server is a standalone PostgreSQL over TCP on 127.0.0.1 with password
(SCRAM) authentication (``storage.server.standalone``), tuned as the embedded one;
otherwise the embedded server (unix socket).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module (which psycopg imports): put the repository root there.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Iterator

from sqlalchemy import create_engine

from bench.scaling.build import Builder, Plan
from bench.scaling.measure import Figures, catalog, latency, planning, query_embedding, vacuum
from bench.scaling.measure import status as status_figures
from bench.scaling.server import BenchServer, open_server
from storage.embedding import Embedder

STARTED = time.perf_counter()


def say(message: str) -> None:
    print(f"[{time.perf_counter() - STARTED:7.0f} s] {message}", flush=True)


def plans(args: argparse.Namespace) -> list[Plan]:
    def plan(memories: int, namespaces: int) -> Plan:
        label = f"{memories // 1000}k" if memories < 1_000_000 else f"{memories / 1e6:g}m"
        return Plan(label, memories, namespaces, int(memories * args.chunks_per_memory))

    large = plan(args.memories, args.namespaces)
    small = plan(args.memories // 10, max(1, args.namespaces // 10))
    chosen = {"small": [small], "large": [large]}.get(args.only, [small, large])
    return chosen


def local_model() -> Embedder | None:
    from storage.embedding import make_embedder
    from storage.kernel.settings import EmbeddingSettings

    return make_embedder(EmbeddingSettings(provider="local"))


def measure(server: BenchServer, plan: Plan, args: argparse.Namespace) -> Figures:
    url = server.url(plan.database)
    engine = create_engine(url, pool_size=4)
    local = local_model()
    figures: Figures = {}
    say(f"{plan.label}: search, priming and document search latency")
    found, queries = latency(engine, plan, local, args.queries, server.cpu_seconds)
    figures |= found
    figures |= query_embedding(local, queries)
    figures |= planning(engine, plan)
    if args.extra_indexes:
        figures |= planning(engine, plan, args.extra_indexes)
    figures |= catalog(engine)
    say(f"{plan.label}: archivist status, VACUUM")
    figures |= status_figures(url, args.workdir)
    figures |= vacuum(engine, "the built store")
    engine.dispose()
    if not args.skip_nightly:
        figures |= nightly(server, plan, args)
    return figures


def nightly(server: BenchServer, plan: Plan, args: argparse.Namespace) -> Figures:
    from bench.scaling.nightly import ageing, sync

    copy = f"{plan.database}_night"
    say(f"{plan.label}: copying the store for the night's work")
    started = time.perf_counter()
    url = server.copy_database(plan.database, copy)
    figures = {
        "copy of the store (CREATE DATABASE ... TEMPLATE)": f"{time.perf_counter() - started:.0f} s"
    }
    try:
        say(f"{plan.label}: the day's sync on 2 process workers")
        figures |= sync(url, args.workdir / f"night-{plan.label}", shards=2, workers=2)
        say(f"{plan.label}: ageing")
        figures |= ageing(url, args.workdir / f"night-{plan.label}")
    finally:
        server.drop_database(copy)
    return figures


@contextlib.contextmanager
def prefect_server(*, skip: bool) -> Iterator[None]:
    if skip:
        yield
        return
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield


def print_side_by_side(results: dict[str, Figures]) -> None:
    labels = list(results)
    keys = list(dict.fromkeys(k for figures in results.values() for k in figures))
    print("\n== figures (" + " | ".join(labels) + ")", flush=True)
    for key in keys:
        print(f"{key}:")
        for label in labels:
            print(f"    {label:>5}  {results[label].get(key, '-')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--namespaces", type=int, default=10_000)
    parser.add_argument("--chunks-per-memory", type=float, default=0.2)
    parser.add_argument("--queries", type=int, default=400, help="per pick (uniform, skewed)")
    parser.add_argument("--tcp", action="store_true", help="a server over TCP with a password")
    parser.add_argument("--reuse", type=Path, help="the run's directory, made or reused")
    parser.add_argument("--skip-nightly", action="store_true", help="no sync and ageing")
    parser.add_argument("--only", choices=["small", "large"], help="one of the two stores")
    parser.add_argument(
        "--extra-indexes",
        type=int,
        default=0,
        help="planning again with this many more large namespaces' HNSW indexes (rolled back)",
    )
    args = parser.parse_args()
    # Started in the background (nohup ... &), this process ignores SIGINT, and so would
    # its Prefect workers, which then outlive the SIGTERM that stops them: handle it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    args.workdir = args.reuse or Path(tempfile.mkdtemp(prefix="archivist-bench-scale-"))
    args.workdir.mkdir(parents=True, exist_ok=True)
    server = open_server(args.workdir, tcp=args.tcp)
    say(f"run directory {args.workdir} ({'TCP with password' if args.tcp else 'embedded'})")
    results: dict[str, Figures] = {}
    try:
        for plan in plans(args):
            say(
                f"{plan.label}: building {plan.memories:,} memories in {plan.namespaces:,} "
                f"namespaces, {plan.chunks:,} document chunks"
            )
            Builder(plan, server.ensure_database(plan.database), say).build()
        with prefect_server(skip=args.skip_nightly):
            for plan in plans(args):
                results[plan.label] = measure(server, plan, args)
                print_side_by_side({plan.label: results[plan.label]})
        print_side_by_side(results)
        say(f"done; the stores stay in {args.workdir} (--reuse {args.workdir})")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
