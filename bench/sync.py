"""Benchmark of memory-sync-daily: 10,000 sessions / 200,000 messages, then a no-op re-run.

    .venv/bin/python bench/sync.py [--sessions 10000] [--messages-per-session 20]
        [--embedder local|hashing] [--shards 4 --workers 2]

Runs on a throw-away embedded PostgreSQL and memory folder (deleted at the end unless
``--keep``), with the chosen embedder (default the local model). First the embedder alone:
memories embedded per second over 5,000 of the generated messages, in the sync's batches.
Then the flow, timed by its own clock (its report's ``seconds``), so Prefect start-up is
excluded; load time is printed apart.

With ``--shards N``, the same data is synced twice, each time on a copy of the loaded
database, and both runs are timed by the wall clock: once as one unsharded flow run in
this process, once as ``memory-sharded-run`` with N shards, run as deployment runs by
``--workers`` process workers (``prefect worker start``, each taking at most
ceil(N / workers) runs at once) of a temporary Prefect server. Worker start-up is
excluded; each shard's own process start-up (Prefect's engine, the embedder) is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module (which psycopg imports): put the repository root there
# instead (bench.sharded).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import atexit
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.kernel.records import MessageRecord, SessionRecord
from storage.kernel.settings import Settings
from storage.sessions import record_messages, record_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages-per-session", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument("--shards", type=int, default=0, help="also run it as N shards")
    parser.add_argument("--workers", type=int, default=2, help="process workers for --shards")
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDING__PROVIDER"] = args.embedder
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-"))
    if not args.keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    os.environ["ARCHIVIST_DATA_DIR"] = str(workdir)
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")

    from flows.daily_sync import memory_sync_daily
    from storage.server.engine import open_store
    from storage.server.migrate import upgrade
    from tasks.samples import generate_bulk

    settings = Settings()
    store = open_store(settings)
    upgrade(store.engine, settings)
    as_of = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
    data = generate_bulk(
        args.sessions,
        args.messages_per_session,
        start=as_of - timedelta(hours=24),
        end=as_of - timedelta(minutes=1),
    )
    started, total = time.perf_counter(), 0
    batch: list[tuple[SessionRecord, list[MessageRecord]]] = []
    for item in data:
        batch.append(item)
        if len(batch) == 500:
            total += load(store.engine, batch)
            batch = []
    total += load(store.engine, batch)
    load_s = time.perf_counter() - started
    print(f"loaded {args.sessions:,} sessions / {total:,} messages in {load_s:.1f} s")
    embedding_rate(settings, as_of)
    if args.shards:
        from bench.sharded import compare_sharded

        compare_sharded(store, as_of, args.shards, args.workers)
        return

    first = memory_sync_daily(as_of=as_of)
    again = memory_sync_daily(as_of=as_of)
    w = first.written
    print(
        f"full run: {first.seconds:.1f} s  ({w.sessions / first.seconds:,.0f} sessions/s, "
        f"{total / first.seconds:,.0f} messages/s; {w.memories_added:,} memories, "
        f"{first.blocks_appended:,} blocks, {len(first.files_touched)} files)"
    )
    print(
        f"no-op re-run: {again.seconds:.2f} s  ({again.unchanged:,} unchanged, "
        f"{again.written.sessions} written)"
    )
    print(f"data dir: {workdir}")


def embedding_rate(settings: Settings, as_of: datetime) -> None:
    """Memories embedded per second by the configured embedder, warm, in the sync's batches."""
    from storage.embedding import make_embedder
    from tasks.samples import generate_bulk

    sample = generate_bulk(250, 20, start=as_of - timedelta(hours=24), end=as_of, seed=5)
    texts = [m.content for _, messages in sample for m in messages]
    embedder = make_embedder(settings.embedding)
    embedder.embed(texts[:64])  # load the model
    started = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - started
    print(
        f"{embedder.name}: {len(texts) / seconds:,.0f} memories embedded/s ({len(texts):,} texts)"
    )


def load(engine: Engine, batch: list[tuple[SessionRecord, list[MessageRecord]]]) -> int:
    """Record sessions and messages in one transaction; returns the message count."""
    with Session(engine) as session, session.begin():
        for record, messages in batch:
            record_session(session, record)
            record_messages(session, record.id, messages)
    return sum(len(m) for _, m in batch)


if __name__ == "__main__":
    main()
