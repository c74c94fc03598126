"""``memory-session-summaries``: memory of a conversation minutes after it goes quiet."""

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

FLOW_NAME = "memory-session-summaries"


@flow(
    name=FLOW_NAME,
    description="Idle sessions into memories within minutes (seed 000).",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_session_summaries(
    as_of: Annotated[
        datetime | None, Field(description="Run as if it were this time; default now")
    ] = None,
    idle_minutes: Annotated[
        float | None,
        Field(gt=0, le=24 * 60, description="Quiet this long; default from settings (30)"),
    ] = None,
    min_user_messages: Annotated[
        int | None,
        Field(ge=0, le=1000, description="Skip shorter sessions; default from settings (1)"),
    ] = None,
    namespace: Annotated[
        str | None, Field(pattern=NAMESPACE_PATTERN, description="Only this namespace")
    ] = None,
    dry_run: Annotated[bool, Field(description="Report what would change, write nothing")] = False,
) -> SyncReport:
    """The daily sync's step for sessions idle long enough; short sessions are kept."""
    settings = Settings()
    policy = settings.summaries
    return sync_sessions(
        FLOW_NAME,
        settings,
        resolve_as_of(as_of, settings),
        window_hours=policy.window_hours,
        min_user_messages=policy.min_user_messages
        if min_user_messages is None
        else min_user_messages,
        namespace=namespace,
        dry_run=dry_run,
        idle_minutes=policy.idle_minutes if idle_minutes is None else idle_minutes,
    )
