"""``memory-cron-watchdog``: no memory job stalls silently (seed 004)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import TAG, resolve_as_of
from storage.config import Settings
from tasks.common import notify_flow_failure
from tasks.watchdog import (
    WatchdogReport,
    decide_task,
    mark_crashed_task,
    notify_task,
    observe_task,
    open_engine,
    publish_report,
    remember_task,
    store_checks_task,
)

FLOW_NAME = "memory-cron-watchdog"


@flow(
    name=FLOW_NAME,
    description="Paused, failed, stale or late deployments, queue health, data quality.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_cron_watchdog(
    as_of: Annotated[
        datetime | None, Field(description="Check as if it were this time; default now")
    ] = None,
    dry_run: Annotated[
        bool, Field(description="Check and report; send nothing, remember nothing")
    ] = False,
    deployments: Annotated[
        list[str] | None,
        Field(description="Only these deployment names; default every one tagged archivist"),
    ] = None,
) -> WatchdogReport:
    """Check every deployment, the queue and data quality; alert after 2 anomalies in a row;
    mark crashed the runs whose process is gone."""
    settings = Settings()
    ws = settings.watchdog
    moment = resolve_as_of(as_of, settings)
    engine = open_engine(settings)
    observed, notes = observe_task(TAG, deployments, moment)
    store_results, store_notes = store_checks_task(engine, settings, ws, moment)
    crashed_notes = [] if dry_run else mark_crashed_task(engine)
    decisions = decide_task(engine, observed, store_results, moment, ws)
    report = WatchdogReport(moment, dry_run, decisions, notes + store_notes + crashed_notes)
    if not dry_run:
        report.channel = notify_task(report.notices, ws)
        remember_task(engine, decisions, moment)
    publish_report(report)
    return report
