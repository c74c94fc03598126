"""``memory-session-summaries``: memory of a conversation minutes after it goes quiet."""

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

FLOW_NAME = "memory-session-summaries"


@flow(
    name=FLOW_NAME,
    description="Conversations that went quiet into memories, within minutes.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_session_summaries(
    as_of: datetime | None = None,
    idle_minutes: Annotated[float | None, Field(gt=0, le=24 * 60)] = None,
    min_user_messages: Annotated[int | None, Field(ge=0, le=1000)] = None,
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None,
    *,
    dry_run: bool = False,
    shard: Annotated[str | None, Field(pattern=SHARD_PATTERN)] = None,
) -> SyncReport:
    """Turn conversations that went quiet into memories, minutes after they end.

    The daily sync's own step, for sessions idle long enough; the daily sync later
    finds them unchanged.

    Args:
        as_of: Run as if it were this moment (ISO 8601). A time without a zone is read
            in ARCHIVIST_TIMEZONE. Empty: now.
        idle_minutes: A session counts as ended after this many quiet minutes.
            Empty: the configured value (30 unless set).
        min_user_messages: Skip sessions with fewer user messages than this.
            Empty: the configured value (1 unless set).
        namespace: Only this namespace (one user or project). Empty: every namespace.
        dry_run: Report what would change and write nothing.
        shard: Only the namespaces of shard i/n (for example 2/4) of a split by a
            stable hash of the namespace, so several workers share the work (see
            memory-sharded-run). Empty: every namespace.
    """
    scope = Scope(namespace, resolve_shard(shard), dry_run=dry_run)
    given = {"idle_minutes": idle_minutes, "min_user_messages": min_user_messages}
    with flow_run(FLOW_NAME, as_of, scope, given) as run:
        policy = run.settings.summaries  # what the parameters leave to configuration
        options = SyncOptions(
            window_hours=policy.window_hours,
            min_user_messages=policy.min_user_messages
            if min_user_messages is None
            else min_user_messages,
            idle_minutes=policy.idle_minutes if idle_minutes is None else idle_minutes,
            # Every 5 minutes: a pass that finds nothing to do leaves its runs row, not one
            # more all-zeros artifact (about 288 a day), as the queue drain does.
            publish_idle=False,
        )
        return sync_sessions(run, options)
