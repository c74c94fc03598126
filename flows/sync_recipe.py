"""The recipe both session flows share: the daily sync and the near-real-time summaries.

Both run the same per-session step over the same fingerprint state, so whichever flow
reaches a session state first writes it, and the other finds it unchanged.
"""

from __future__ import annotations

from prefect import get_run_logger

from flows.common import FlowRun
from tasks.common import pseudonyms_task
from tasks.progress import progress
from tasks.sync import (
    SESSIONS,
    BatchOutcome,
    FlushOutcome,
    SyncOptions,
    SyncReport,
    SyncWork,
    build_context,
    build_report,
    ingest_task,
    plan_task,
    process_batch_task,
    skipped,
    touched_namespaces,
    write_files_task,
)


def sync_sessions(run: FlowRun, options: SyncOptions) -> SyncReport:
    """Load, plan, write each batch, deliver the file blocks, report."""
    scope, store = run.scope, run.store
    if scope.shard is not None and options.transcripts_url:
        raise ValueError(
            "a shard does not load transcripts: load them once (archivist ingest, or the "
            "sharded run's own transcripts_url), then run the shards"
        )
    dry_run = scope.dry_run
    recovered = FlushOutcome() if dry_run else write_files_task(store, None, scope.shard)
    url = options.transcripts_url
    ingested = ingest_task(store, url, dry_run=dry_run) if url else None
    plan = plan_task(store, run.as_of, options, scope)
    ctx = build_context(run.settings, run.embedder, run.as_of, run.run_id, dry_run=dry_run)
    written, size, done = BatchOutcome(), run.settings.sync.batch_size, 0
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
    flushed = FlushOutcome() if dry_run else write_files_task(store, None, scope.shard)
    touched = touched_namespaces(recovered, flushed)
    names = pseudonyms_task(store, [scope.namespace, *touched], skipped(plan))
    work = SyncWork(written, recovered, flushed, ingested)
    report = build_report(run.name, plan, scope, work, run.started, names)
    run.finish(report)
    if options.publish_idle or not report.idle:
        run.publish(report)
    return report
