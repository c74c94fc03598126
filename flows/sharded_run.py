"""``memory-sharded-run``: one night's work split by namespace across a work pool's workers."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated, Any, Literal

from prefect import flow
from pydantic import Field

from flows.common import flow_run
from storage.kernel.shards import MAX_SHARDS, Shard
from tasks.common import notify_flow_failure
from tasks.shards import ShardedReport, collect_task, fan_out_task, sum_reports, wait_task
from tasks.sync import ingest_task

FLOW_NAME = "memory-sharded-run"
Shardable = Literal["memory-sync-daily", "memory-session-summaries", "memory-aging"]


@flow(
    name=FLOW_NAME,
    description="One flow's work split by namespace into shards that the pool's workers share.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_sharded_run(
    flow_name: Shardable = "memory-sync-daily",
    shards: Annotated[int, Field(ge=1, le=MAX_SHARDS)] = 4,
    as_of: datetime | None = None,
    parameters: dict[str, Any] | None = None,
    transcripts_url: str | None = None,
    timeout_minutes: Annotated[float, Field(gt=0, le=24 * 60)] = 360,
    poll_seconds: Annotated[float, Field(gt=0, le=300)] = 5,
) -> ShardedReport:
    """Run a flow as shards: one deployment run per shard, which the work pool's workers
    share, then wait for all and report their counts summed. A failed or unfinished shard
    fails this run; running it again finishes the work, and shards already done find
    nothing left to do.

    Args:
        flow_name: The flow to split; its deployment of the same name runs each shard.
        shards: Into how many shards to split the namespaces (by a stable hash).
        as_of: Run every shard as if it were this moment (ISO 8601). A time without a
            zone is read in ARCHIVIST_TIMEZONE. Empty: now, the same for every shard.
        parameters: Other parameters of the flow for every shard, for example
            {"window_hours": 48}. Empty: the flow's defaults.
        transcripts_url: Load JSONL transcripts from this file or fsspec URL once, before
            the shards start (sync flows only). Empty: load nothing.
        timeout_minutes: Stop waiting for the shards after this long, and fail.
        poll_seconds: How often to check on the shards.
    """
    if transcripts_url and flow_name == "memory-aging":
        raise ValueError("transcripts_url loads conversations: it goes with a sync flow only")
    recorded = {"flow_name": flow_name, "shards": shards, "parameters": parameters or {}}
    with flow_run(FLOW_NAME, as_of, parameters=recorded, embedder=False) as run:
        started = time.monotonic()
        if transcripts_url:
            ingest_task(run.store, transcripts_url, dry_run=False)
        child_parameters = {**(parameters or {}), "as_of": run.as_of.isoformat()}
        runs = fan_out_task(f"{flow_name}/{flow_name}", Shard.all(shards), child_parameters)
        finished = wait_task(run.store, flow_name, runs, timeout_minutes * 60, poll_seconds)
        outcomes = collect_task(run.store, finished)
        report = ShardedReport(flow_name, run.as_of.isoformat(), outcomes)
        report.totals = sum_reports(s.report for s in outcomes if s.completed)
        report.seconds = time.monotonic() - started
        run.publish(report)
        if report.unfinished:
            names = ", ".join(f"{s.shard} ({s.state})" for s in report.unfinished)
            raise RuntimeError(f"shards not completed: {names}; run {FLOW_NAME} again to finish")
        run.finish(report)
    return report
