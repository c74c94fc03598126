"""``memory-sync-daily``: turn the day's conversations into memories and a daily log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import flow_run, resolve_shard
from flows.sync_recipe import sync_sessions
from storage.kernel.records import NAMESPACE_PATTERN
from storage.kernel.shards import SHARD_PATTERN, Scope
from tasks.common import notify_flow_failure
from tasks.sync import SyncOptions, SyncReport

FLOW_NAME = "memory-sync-daily"


@flow(
    name=FLOW_NAME,
    description="The last hours' conversations into memories, episodes and the daily log.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_sync_daily(
    as_of: datetime | None = None,
    window_hours: Annotated[float, Field(gt=0, le=24 * 366)] = 26,
    min_user_messages: Annotated[int, Field(ge=0, le=1000)] = 2,
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None,
    *,
    dry_run: bool = False,
    transcripts_url: str | None = None,
    shard: Annotated[str | None, Field(pattern=SHARD_PATTERN)] = None,
) -> SyncReport:
    """Turn the day's conversations into memories, episodes and the daily log.

    Safe to re-run for any day: a session already written is skipped, and a run that
    stopped midway finishes its work on the next run.

    Args:
        as_of: Run as if it were this moment (ISO 8601). A time without a zone is read
            in ARCHIVIST_TIMEZONE. Empty: now.
        window_hours: How many hours before as_of to look back for sessions.
        min_user_messages: Skip sessions with fewer user messages than this.
        namespace: Only this namespace (one user or project). Empty: every namespace.
        dry_run: Report what would change and write nothing.
        transcripts_url: Load JSONL transcripts from this file or fsspec URL (for
            example s3://bucket/chats/) before syncing. Empty: load nothing.
        shard: Only the namespaces of shard i/n (for example 2/4) of a split by a
            stable hash of the namespace, so several workers share the work (see
            memory-sharded-run). Empty: every namespace.
    """
    options = SyncOptions(window_hours, min_user_messages, transcripts_url=transcripts_url)
    scope = Scope(namespace, resolve_shard(shard), dry_run=dry_run)
    with flow_run(FLOW_NAME, as_of, scope, options.recorded()) as run:
        return sync_sessions(run, options)
