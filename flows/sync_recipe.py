"""The recipe both session flows share: the daily sync and the near-real-time summaries.

Both run the same per-session step over the same fingerprint state, so whichever flow
reaches a session state first writes it, and the other finds it unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import get_run_logger

from storage.kernel.settings import Settings
from storage.kernel.shards import Shard
from tasks.common import connect_task, finish_run, pseudonyms_task, publish_report, start_run
from tasks.progress import progress
from tasks.sync import (
    SESSIONS,
    BatchOutcome,
    FlushOutcome,
    SyncReport,
    build_context,
    build_report,
    ingest_task,
    plan_task,
    process_batch_task,
    skipped,
    touched_namespaces,
    write_files_task,
)


def sync_sessions(
    flow: str,
    settings: Settings,
    as_of: datetime,
    *,
    window_hours: float,
    min_user_messages: int,
    namespace: str | None,
    dry_run: bool,
    idle_minutes: float | None = None,
    transcripts_url: str | None = None,
    shard: Shard | None = None,
    publish_idle: bool = True,
) -> SyncReport:
    """Load, plan, write each batch, deliver the file blocks, report (an idle pass's report
    becomes an artifact only with ``publish_idle``)."""
    if shard is not None and transcripts_url:
        raise ValueError(
            "a shard does not load transcripts: load them once (archivist ingest, or the "
            "sharded run's own transcripts_url), then run the shards"
        )
    started = datetime.now(UTC)
    store, embedder = connect_task(settings)
    params = {
        "window_hours": window_hours,
        "min_user_messages": min_user_messages,
        "namespace": pseudonyms_task(store, [namespace]).namespace(namespace),
        "dry_run": dry_run,
        "idle_minutes": idle_minutes,
        "transcripts_url": transcripts_url,
        "shard": None if shard is None else str(shard),
    }
    run_id = None if dry_run else start_run(store, flow, as_of, params)
    recovered = FlushOutcome() if dry_run else write_files_task(store, None, shard)
    ingested = ingest_task(store, transcripts_url, dry_run) if transcripts_url else None
    plan = plan_task(store, as_of, window_hours, min_user_messages, namespace, idle_minutes, shard)
    ctx = build_context(settings, embedder, as_of, run_id, dry_run)
    written, size, done = BatchOutcome(), settings.sync.batch_size, 0
    batches = [plan.to_process[i : i + size] for i in range(0, len(plan.to_process), size)]
    for number, batch in enumerate(batches, start=1):
        written.merge(process_batch_task(store, ctx, batch))
        done += len(batch)
        get_run_logger().info(
            "batch %d/%d: %d sessions written",
            number,
            len(batches),
            written.sessions,
            extra=progress(SESSIONS, done, len(plan.to_process)),
        )
    flushed = FlushOutcome() if dry_run else write_files_task(store, None, shard)
    touched = touched_namespaces(recovered, flushed)
    names = pseudonyms_task(store, [namespace, *touched], skipped(plan))
    report = build_report(
        flow,
        plan,
        namespace,
        dry_run,
        written,
        recovered,
        flushed,
        ingested,
        started,
        datetime.now(UTC),
        shard=None if shard is None else str(shard),
        names=names,
    )
    if run_id is not None:
        finish_run(store, run_id, report)
    if publish_idle or not report.idle:
        publish_report(flow, report)
    return report
