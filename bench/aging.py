"""Benchmark of memory-aging's steps: decay, compression and archival throughput (rows/s).

    .venv/bin/python bench/aging.py [--rows 1000000] [--sessions 2000] [--turns 20]

Runs on a throw-away embedded PostgreSQL and a local archive folder (deleted at the end
unless ``--keep``). ``--rows`` memories
(random unit float32 vectors, 20 namespaces in runs of 50 consecutive rows as a session
writes them, ``occurred_at`` spread over three years, so
about two thirds are older than 365 days) are loaded by binary COPY
(``storage.memories.insert_memories``, salience decayed to the load time, as a back-fill
by the sync gets it); ``--sessions`` old sessions of ``--turns``
messages each, with one turn memory per message, an episode and a processed state, are
made in SQL. Then, timed apart: decay over every memory (the first run after the load
and a second at the same time write none; the next night's run writes only the rows that
moved by more than 0.01), compression of the old sessions, archival of the old memories,
and last a decay after the half-life is changed, which rewrites every row left.
"""

from __future__ import annotations

import sys
from pathlib import Path

from storage.kernel.shards import Scope

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module (which psycopg imports); the package is installed.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import atexit
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from fsspec.implementations.local import LocalFileSystem
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.memories import NewMemory, insert_memories
from storage.operations.aging import DecayParams

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
DIM, NAMESPACES, LOAD_BATCH = 384, 20, 100_000

SESSIONS_SQL = text(
    """
    WITH s AS (
        INSERT INTO chat_sessions (id, namespace, agent, kind)
        SELECT 'bench-' || i, 'ns' || (i % 20), 'aria', 'direct' FROM generate_series(1, :n) i
        RETURNING id, namespace
    ), msgs AS (
        INSERT INTO chat_messages (session_id, id, role, speaker, content, ts)
        SELECT s.id, 'm' || j, CASE WHEN j % 2 = 0 THEN 'user' ELSE 'assistant' END, 'x',
               'message ' || j || ' of session ' || s.id || ' about the Lisbon trip',
               :start + make_interval(mins => j)
        FROM s, generate_series(0, :turns - 1) j
        RETURNING session_id, id, content, ts
    ), turns AS (
        INSERT INTO memories (namespace, kind, content, content_key, embedding, embedding_model,
                              session_id, message_ids, occurred_at, created_at)
        SELECT s.namespace, 'turn', m.content, md5(m.session_id || m.id), CAST(:vec AS vector),
               'bench', m.session_id, ARRAY[m.id], m.ts, m.ts
        FROM msgs m JOIN s ON s.id = m.session_id
        RETURNING 1
    ), eps AS (
        INSERT INTO memories (namespace, kind, content, content_key, embedding, embedding_model,
                              session_id, occurred_at, created_at)
        SELECT namespace, 'episode', 'Summary of ' || id, md5(id), CAST(:vec AS vector),
               'bench', id, :last, :last
        FROM s RETURNING id, session_id, namespace
    ), ep AS (
        INSERT INTO episodes (namespace, session_id, memory_id, summary, topics, entities,
            user_state, outcomes, open_threads, importance, vehemence, urgency, sentiment,
            risk, message_count, started_at, ended_at, fingerprint, extractor, created_at)
        SELECT namespace, session_id, id, 'Summary of ' || session_id, '{}', '{}', '{}', '[]',
               '[]', 0.5, 0, 0, 0, 0, :turns, :start, :last, 'f', 'bench', :last
        FROM eps RETURNING 1
    )
    INSERT INTO processed_sessions (session_id, namespace, fingerprint, message_count,
                                    last_message_at, processed_as_of)
    SELECT id, namespace, 'f', :turns, :last, :last FROM s
    """
)


def load_memories(engine: Engine, rows: int, half_life_days: float) -> float:
    """``rows`` memories by binary COPY; returns the seconds it took."""
    rng = np.random.default_rng(7)
    started, span = time.perf_counter(), 3 * 365 * 86400
    for first in range(0, rows, LOAD_BATCH):
        n = min(LOAD_BATCH, rows - first)
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ages = rng.integers(0, span, n)
        batch = [
            NewMemory(
                namespace=f"ns{(first + i) // 50 % NAMESPACES}",  # 50-row runs, like sessions
                kind="fact",
                content=f"bench fact {first + i} about topic {(first + i) % 997}",
                content_key=f"{first + i:x}",
                embedding=vectors[i],
                embedding_model="bench",
                importance=0.5,
                vehemence=0.0,
                session_id=None,
                message_ids=(),
                run_id=None,
                extractor="bench",
                occurred_at=AS_OF - timedelta(seconds=int(ages[i])),
                created_at=AS_OF,
            )
            for i in range(n)
        ]
        with Session(engine) as session, session.begin():
            insert_memories(session, batch, half_life_days=half_life_days)
    return time.perf_counter() - started


def load_sessions(engine: Engine, sessions: int, turns: int) -> int:
    """Old sessions ready for compression; returns messages + turn memories made."""
    start = AS_OF - timedelta(days=200)
    vec = "[" + ",".join(["0.05"] * DIM) + "]"
    params = {"n": sessions, "turns": turns, "start": start, "vec": vec}
    params["last"] = start + timedelta(minutes=turns)
    with Session(engine) as session, session.begin():
        session.execute(SESSIONS_SQL, params)
    return 2 * sessions * turns


def report(label: str, rows: int, seconds: float) -> None:
    print(
        f"{label:<34} {rows:>10,} rows {seconds:8.2f} s {rows / max(seconds, 1e-9):>12,.0f} rows/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the work dir (2-3 GB)")
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-aging-"))
    if not args.keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    os.environ["ARCHIVIST_DATA_DIR"] = str(workdir)
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)

    from storage.embedding import HashingEmbedder
    from storage.kernel.settings import Settings
    from storage.server.engine import open_store
    from storage.server.migrate import upgrade
    from tasks.aging import ColdStore, archive_old, compress_old, decay

    settings = Settings()
    store = open_store(settings)
    upgrade(store.engine, settings)
    engine, policy = store.engine, settings.aging
    print(f"work dir {workdir}; {args.rows:,} memories, {args.sessions:,} sessions")
    loaded = load_memories(engine, args.rows, policy.half_life_days)
    report("load (binary COPY)", args.rows, loaded)
    with engine.begin() as conn:
        conn.execute(text("ANALYZE memories"))
    params = DecayParams(AS_OF, policy.half_life_days, policy.salience_epsilon, Scope())
    started = time.perf_counter()
    first = decay(engine, params, policy.decay_batch)
    report("decay, first run (rows seen)", first.memories_seen, time.perf_counter() - started)
    print(f"{'':<34} {first.memories_written:>10,} rows written")
    for label, later in (("decay, same night again", 0), ("decay, next night", 1)):
        params = DecayParams(
            AS_OF + timedelta(days=later), policy.half_life_days, policy.salience_epsilon, Scope()
        )
        started = time.perf_counter()
        again = decay(engine, params, policy.decay_batch)
        report(f"{label} (rows seen)", again.memories_seen, time.perf_counter() - started)
        print(f"{'':<34} {again.memories_written:>10,} rows written")

    made = load_sessions(engine, args.sessions, args.turns)
    cold = ColdStore(LocalFileSystem(), str(workdir / "archive"))
    started = time.perf_counter()
    out = compress_old(engine, cold, HashingEmbedder(DIM), AS_OF - timedelta(days=90), 500, Scope())
    seconds = time.perf_counter() - started
    report("compression (messages + turns)", out.messages_deleted + out.turns_folded, seconds)
    print(f"{'':<34} {out.sessions:>10,} sessions ({made:,} rows made)")

    started = time.perf_counter()
    archived = archive_old(engine, cold, AS_OF - timedelta(days=365), policy.archive_batch, Scope())
    report("archival", archived.rows_archived, time.perf_counter() - started)
    print(f"{'':<34} {archived.files:>10,} Parquet files")

    # The worst case: a new half-life moves every salience, so every row is written again.
    params = DecayParams(AS_OF, 2 * policy.half_life_days, policy.salience_epsilon, Scope())
    started = time.perf_counter()
    changed = decay(engine, params, policy.decay_batch)
    report("decay, half-life doubled (seen)", changed.memories_seen, time.perf_counter() - started)
    print(f"{'':<34} {changed.memories_written:>10,} rows written")


if __name__ == "__main__":
    main()
