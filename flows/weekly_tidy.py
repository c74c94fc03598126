"""``memory-weekly-tidy``: the week into MEMORY.md, a weekly summary and the archive."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import resolve_as_of
from storage.config import Settings
from storage.records import NAMESPACE_PATTERN
from tasks.common import connect_task, finish_run, notify_flow_failure, publish_report, start_run
from tasks.tidy import (
    TidyReport,
    build_report,
    make_context,
    namespaces_task,
    tidy_namespace_task,
)

FLOW_NAME = "memory-weekly-tidy"


@flow(
    name=FLOW_NAME,
    description="Capped MEMORY.md, weekly summary, daily logs archived.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_weekly_tidy(
    as_of: Annotated[
        datetime | None, Field(description="Run as if it were this time; default now")
    ] = None,
    namespace: Annotated[
        str | None, Field(pattern=NAMESPACE_PATTERN, description="Only this namespace")
    ] = None,
    dry_run: Annotated[bool, Field(description="Report what would change, write nothing")] = False,
) -> TidyReport:
    """Weekly tidy (seed 004): re-running the same week changes nothing."""
    settings = Settings()
    started, moment = datetime.now(UTC), resolve_as_of(as_of, settings)
    store, embedder = connect_task(settings)
    params = {"namespace": namespace, "dry_run": dry_run}
    run_id = None if dry_run else start_run(store, FLOW_NAME, moment, params)
    ctx = make_context(settings, embedder, moment, run_id, dry_run)
    outcomes = [tidy_namespace_task(store, ctx, ns) for ns in namespaces_task(store, namespace)]
    report = build_report(FLOW_NAME, ctx, namespace, outcomes, started, datetime.now(UTC))
    if run_id is not None:
        finish_run(store, run_id, report)
    publish_report(FLOW_NAME, report)
    return report
