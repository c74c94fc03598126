"""``memory-sync-daily``: turn the day's conversations into memories and a daily log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import resolve_as_of
from flows.sync_recipe import sync_sessions
from storage.config import Settings
from storage.records import NAMESPACE_PATTERN
from tasks.common import notify_flow_failure
from tasks.sync import SyncReport

FLOW_NAME = "memory-sync-daily"


@flow(
    name=FLOW_NAME,
    description="Sessions of the last hours into memories, episodes and logs.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
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
    settings = Settings()
    return sync_sessions(
        FLOW_NAME,
        settings,
        resolve_as_of(as_of, settings),
        window_hours=window_hours,
        min_user_messages=min_user_messages,
        namespace=namespace,
        dry_run=dry_run,
        transcripts_url=transcripts_url,
    )
