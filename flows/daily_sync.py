"""``memory-sync-daily``: turn the day's conversations into memories and a daily log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from prefect import flow, get_run_logger
from pydantic import Field

from flows.common import NAMESPACE_PATTERN, resolve_as_of
from storage.config import Settings
from tasks.outbox import FlushOutcome
from tasks.report import SyncReport, build_report
from tasks.steps import (
    build_context,
    connect_task,
    finish_run,
    ingest_task,
    plan_task,
    process_batch_task,
    publish_report,
    start_run,
    write_files_task,
)
from tasks.sync import BatchOutcome

FLOW_NAME = "memory-sync-daily"


@flow(name=FLOW_NAME, description="Sessions of the last hours into memories, episodes and logs.")
def memory_sync_daily(
    as_of: Annotated[
        datetime | None, Field(description="Run as if it were this time; default now")
    ] = None,
    window_hours: Annotated[float, Field(gt=0, le=24 * 366, description="Look-back hours")] = 26,
    min_user_messages: Annotated[
        int, Field(ge=0, le=1000, description="Skip sessions with fewer user messages")
    ] = 2,
    namespace: Annotated[
        str | None, Field(pattern=NAMESPACE_PATTERN, description="Only this namespace")
    ] = None,
    dry_run: Annotated[bool, Field(description="Report what would change, write nothing")] = False,
    transcripts_url: Annotated[
        str | None, Field(description="Load JSONL transcripts from this fsspec URL first")
    ] = None,
) -> SyncReport:
    """Daily sync (seed 004): fingerprint-idempotent, crash-safe, re-runnable for any day."""
    started = datetime.now(UTC)
    settings = Settings()
    as_of = resolve_as_of(as_of, settings)
    store, embedder = connect_task(settings)
    params = {
        "window_hours": window_hours,
        "min_user_messages": min_user_messages,
        "namespace": namespace,
        "dry_run": dry_run,
        "transcripts_url": transcripts_url,
    }
    run_id = None if dry_run else start_run(store, FLOW_NAME, as_of, params)
    recovered = FlushOutcome() if dry_run else write_files_task(store, None)
    ingested = ingest_task(store, transcripts_url, dry_run) if transcripts_url else None
    plan = plan_task(store, as_of, window_hours, min_user_messages, namespace)
    ctx = build_context(settings, embedder, as_of, run_id, dry_run)
    written, size = BatchOutcome(), settings.sync.batch_size
    batches = [plan.to_process[i : i + size] for i in range(0, len(plan.to_process), size)]
    for number, batch in enumerate(batches, start=1):
        written.merge(process_batch_task(store, ctx, batch))
        get_run_logger().info(
            "batch %d/%d: %d sessions written", number, len(batches), written.sessions
        )
    flushed = FlushOutcome() if dry_run else write_files_task(store, None)
    report = build_report(
        plan, namespace, dry_run, written, recovered, flushed, ingested, started, datetime.now(UTC)
    )
    if run_id is not None:
        finish_run(store, run_id, report)
    publish_report(report)
    return report
