"""Thin Prefect tasks of the session flows: ingest, plan, process a batch, write the files."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import fsspec
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from sqlalchemy.orm import Session

from storage.embedding import Embedder
from storage.kernel.errors import ROWS_REFUSED
from storage.kernel.settings import Settings
from storage.kernel.shards import Scope, Shard
from storage.processed import Candidate
from storage.server.engine import Store
from tasks.common import IO_RETRY
from tasks.extraction import make_extractor
from tasks.files import FlushOutcome, flush_blocks, open_memory_root
from tasks.progress import progress
from tasks.sync._process import derive_batch, plan_sync, read_batch, write_batch
from tasks.sync._redacted import RedactedSource, stored_source
from tasks.sync._transcripts import IngestReport, JsonlTranscripts, ingest
from tasks.sync._types import BatchOutcome, SyncContext, SyncOptions, SyncPlan

# The label of the sessions' progress (``tasks.progress``): planned, then batch by batch.
SESSIONS = "sessions processed"


@task(name="ingest-transcripts", cache_policy=NO_CACHE, **IO_RETRY)
def ingest_task(store: Store, url: str, *, dry_run: bool) -> IngestReport:
    """Load JSONL transcripts into the raw tables (dry run: parse and report only).

    With redaction before storage on, what is stored holds placeholders, not the values.
    """
    logger = get_run_logger()
    fs, root = fsspec.core.url_to_fs(url, **store.settings.storage_options)
    source = stored_source(JsonlTranscripts(fs, root), store.settings.redaction)
    report = ingest(store.engine, source, dry_run=dry_run)
    if isinstance(source, RedactedSource):
        report.redactions = dict(sorted(source.counts.items()))
    for problem in report.problems:
        logger.warning("bad input: %s", problem)
    logger.info(
        "transcripts: %d files, %d problems, %d empty messages",
        report.files,
        len(report.problems),
        report.empty_content,
    )
    return report


@task(name="plan-sync", cache_policy=NO_CACHE, **IO_RETRY)
def plan_task(store: Store, as_of: datetime, options: SyncOptions, scope: Scope) -> SyncPlan:
    min_user_messages = options.min_user_messages
    with Session(store.engine) as session:
        plan = plan_sync(
            session,
            as_of,
            options.window_hours,
            min_user_messages,
            scope.namespace,
            options.idle_minutes,
            scope.shard,
        )
    get_run_logger().info(
        "%d sessions in the window: %d to write, %d unchanged, %d processed later, "
        "%d still active, %d with < %d user messages, %d with no user message and fewer "
        "assistant messages",
        plan.seen,
        len(plan.to_process),
        len(plan.unchanged),
        len(plan.later_state),
        len(plan.still_active),
        len(plan.skipped_few_user_messages),
        min_user_messages,
        len(plan.skipped_no_user_message),
        extra=progress(SESSIONS, 0, len(plan.to_process)),
    )
    return plan


@task(name="process-batch", cache_policy=NO_CACHE, **IO_RETRY)
def process_batch_task(store: Store, ctx: SyncContext, batch: Sequence[Candidate]) -> BatchOutcome:
    """One batch, its sessions written alone if the database refuses the batch."""
    outcome = process_isolated(store, ctx, batch)
    if outcome.sessions_refused:
        get_run_logger().warning(
            "%d session(s) refused by the database: skipped, tried again next run",
            outcome.sessions_refused,
        )
    return outcome


def process_isolated(store: Store, ctx: SyncContext, batch: Sequence[Candidate]) -> BatchOutcome:
    """The batch, or, when the database refuses its rows (``ROWS_REFUSED``: what one
    session's data can cause; a server that is gone raises), each session alone: the
    refused ones are counted and skipped, the others written."""
    try:
        return process_candidates(store, ctx, batch)
    except ROWS_REFUSED:
        if len(batch) == 1:
            return BatchOutcome(sessions_refused=1)
    outcome = BatchOutcome()
    for candidate in batch:
        try:
            outcome.merge(process_candidates(store, ctx, [candidate]))
        except ROWS_REFUSED:
            outcome.sessions_refused += 1
    return outcome


def process_candidates(store: Store, ctx: SyncContext, batch: Sequence[Candidate]) -> BatchOutcome:
    """A read, the model calls with no transaction open, then a write of all or nothing."""
    with Session(store.engine) as session:
        states, existing = read_batch(session, ctx, batch)
    prepared = derive_batch(ctx, states, existing)
    with Session(store.engine) as session, session.begin():
        return write_batch(session, ctx, prepared)


@task(name="write-memory-files", cache_policy=NO_CACHE, **IO_RETRY)
def write_files_task(
    store: Store, namespace: str | None, shard: Shard | None = None
) -> FlushOutcome:
    """Append pending blocks (of a namespace or a shard) to the memory files, exactly once
    each."""
    root = open_memory_root(store.settings)
    outcome = flush_blocks(store.engine, root, namespace, shard=shard)
    if outcome.files:
        get_run_logger().info(
            "%d blocks appended to %d files", outcome.blocks_appended, len(outcome.files)
        )
    return outcome


def build_context(
    settings: Settings, embedder: Embedder, as_of: datetime, run_id: Any, *, dry_run: bool
) -> SyncContext:
    """The per-run context every batch shares."""
    return SyncContext(
        extractor=make_extractor(settings),
        embedder=embedder,
        as_of=as_of,
        tz=settings.tz,
        run_id=run_id,
        dry_run=dry_run,
        half_life_days=settings.aging.half_life_days,
        turn_context=settings.embedding.turn_context,
    )
