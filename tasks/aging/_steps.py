"""Thin Prefect tasks over the ageing functions: names, retries on I/O, logged counts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from storage.embedding import Embedder
from storage.kernel.shards import Scope
from storage.operations.access import LogWindow
from storage.operations.aging import DecayParams
from storage.server.engine import Store
from tasks.aging._archival import ArchiveOutcome, archive_old
from tasks.aging._cold_store import ColdStore
from tasks.aging._compression import CompressOutcome, compress_old
from tasks.aging._run import (
    STEPS,
    AccessLogOutcome,
    AgingReport,
    DecayOutcome,
    DeleteOutcome,
    decay,
    delete_old,
    prune_access_log,
)
from tasks.common import IO_RETRY
from tasks.files import flush_blocks, open_memory_root
from tasks.progress import progress

COMPRESS_BATCH = 500
# The label of the run's progress (``tasks.progress``): steps done of ``STEPS``.
AGING_STEPS = "aging steps"


@contextmanager
def timed(report: AgingReport, step: str) -> Iterator[None]:
    """Record a step's wall time in the report; log its start and end as progress."""
    logger, number, total = get_run_logger(), STEPS.index(step) + 1, len(STEPS)
    logger.info(
        "%s: step %d of %d",
        step,
        number,
        total,
        extra=progress(AGING_STEPS, number - 1, total, step),
    )
    started = time.perf_counter()
    yield
    report.seconds[step] = round(time.perf_counter() - started, 3)
    logger.info(
        "%s: done in %.2f s",
        step,
        report.seconds[step],
        extra=progress(AGING_STEPS, number, total, step),
    )


@task(name="decay-salience", cache_policy=NO_CACHE, **IO_RETRY)
def decay_task(store: Store, params: DecayParams) -> DecayOutcome:
    out = decay(store.engine, params, store.settings.aging.decay_batch)
    get_run_logger().info(
        "decay: %d/%d memories and %d/%d episodes moved by more than %g",
        out.memories_written,
        out.memories_seen,
        out.episodes_written,
        out.episodes_seen,
        params.epsilon,
    )
    return out


@task(name="compress-sessions", cache_policy=NO_CACHE, **IO_RETRY)
def compress_task(
    store: Store, cold: ColdStore, embedder: Embedder, cutoff: datetime, scope: Scope
) -> CompressOutcome:
    out = compress_old(store.engine, cold, embedder, cutoff, COMPRESS_BATCH, scope)
    get_run_logger().info(
        "compression: %d sessions, %d turns folded, %d messages to the cold tier",
        out.sessions,
        out.turns_folded,
        out.messages_archived,
    )
    return out


@task(name="archive-memories", cache_policy=NO_CACHE, **IO_RETRY)
def archive_task(
    store: Store, cold: ColdStore, cutoff: datetime, scope: Scope, *, as_of: datetime | None = None
) -> ArchiveOutcome:
    """Archive, then append each committed file's line to its namespace's timeline (and
    any other block still pending there)."""
    batch = store.settings.aging.archive_batch
    out = archive_old(store.engine, cold, cutoff, batch, scope, as_of=as_of)
    if not scope.dry_run:
        root = open_memory_root(store.settings)
        flush_blocks(store.engine, root, scope.namespace, shard=scope.shard)
    get_run_logger().info(
        "archival: %d candidates, %d rows in %d files (%d recovered, %d discarded)",
        out.candidates,
        out.rows_archived,
        out.files,
        out.recovered,
        out.discarded,
    )
    return out


@task(name="delete-expired", cache_policy=NO_CACHE, **IO_RETRY)
def delete_task(store: Store, cold: ColdStore, cutoff: datetime, scope: Scope) -> DeleteOutcome:
    enabled = store.settings.aging.deletion_enabled
    out = delete_old(store.engine, cold, cutoff, scope, enabled=enabled)
    if not enabled:
        get_run_logger().info("deletion is off (ARCHIVIST_AGING__DELETION_ENABLED)")
    return out


@task(name="prune-access-log", cache_policy=NO_CACHE, **IO_RETRY)
def access_log_task(store: Store, cutoff: datetime, scope: Scope) -> AccessLogOutcome:
    """The access log's rows before ``cutoff``, counted by day and deleted."""
    settings = store.settings
    window = LogWindow(cutoff, settings.timezone, scope.namespace, scope.shard)
    batch = settings.aging.decay_batch
    out = prune_access_log(store.engine, window, batch, dry_run=scope.dry_run)
    get_run_logger().info(
        "access log: %d rows older than %g days counted into %d (namespace, day) totals",
        out.rows,
        settings.aging.access_log_days,
        out.days,
    )
    return out
