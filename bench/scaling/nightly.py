"""The night's work on a copy of a scale store: the day's sync on two process workers, then
ageing (decay, compression, archival) and a VACUUM; the copy is dropped after."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from fsspec.implementations.local import LocalFileSystem
from sqlalchemy import create_engine

from bench.scaling.build import AS_OF
from bench.scaling.measure import Figures, vacuum
from storage.embedding import HashingEmbedder
from storage.kernel.settings import Settings
from storage.kernel.shards import Scope
from storage.operations.aging import DecayParams


def sync(url: str, workdir: Path, shards: int, workers: int) -> Figures:
    """The day's sessions of every namespace synced by ``memory-sharded-run`` with
    ``shards`` shards on ``workers`` process workers (hashing embedder), timed by the wall
    clock from the parent's start (the workers' own start-up excluded)."""
    from bench.sharded import timed_run

    os.environ["ARCHIVIST_EMBEDDING__PROVIDER"] = "hashing"
    os.environ["ARCHIVIST_MEMORY_ROOT"] = str(workdir / "memory")
    os.environ["ARCHIVIST_DATA_DIR"] = str(workdir / "sync-data")
    seconds, report = timed_run(url, AS_OF, shards, workers)
    written = report.totals.get("written", {})
    states = ", ".join(f"{s.shard} {s.state}" for s in report.shards)
    return {
        f"daily sync, {shards} shards on {workers} process workers": (
            f"{seconds:.1f} s wall: {written.get('sessions', 0):,} sessions, "
            f"{written.get('memories_added', 0):,} memories written ({states})"
        )
    }


def ageing(url: str, workdir: Path) -> Figures:
    """One night of memory-aging's steps over the whole store, as its flow runs them."""
    from tasks.aging import ColdStore, archive_old, compress_old, decay

    settings = Settings(database_url=url)
    policy = settings.aging
    engine = create_engine(url, pool_size=2)
    cold = ColdStore(LocalFileSystem(), str(workdir / "archive"))
    out: Figures = {}
    started = time.perf_counter()
    params = DecayParams(AS_OF, policy.half_life_days, policy.salience_epsilon, Scope())
    done = decay(engine, params, policy.decay_batch)
    out["ageing: decay"] = (
        f"{time.perf_counter() - started:.1f} s ({done.memories_seen:,} memories seen, "
        f"{done.memories_written:,} written)"
    )
    started = time.perf_counter()
    compressed = compress_old(
        engine, cold, HashingEmbedder(), AS_OF - timedelta(days=90), 500, Scope()
    )
    out["ageing: compression"] = (
        f"{time.perf_counter() - started:.1f} s ({compressed.sessions:,} sessions, "
        f"{compressed.turns_folded:,} turns folded, {compressed.messages_deleted:,} messages "
        "moved to cold)"
    )
    started = time.perf_counter()
    archived = archive_old(
        engine, cold, AS_OF - timedelta(days=365), policy.archive_batch, Scope(), as_of=AS_OF
    )
    out["ageing: archival"] = (
        f"{time.perf_counter() - started:.1f} s ({archived.rows_archived:,} memories to "
        f"{archived.files:,} Parquet files)"
    )
    out |= vacuum(engine, "after the sync and ageing")
    engine.dispose()
    return out
