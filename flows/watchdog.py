"""``memory-cron-watchdog``: no memory job stalls silently."""

from __future__ import annotations

from datetime import datetime

from prefect import flow

from flows.common import TAG, flow_run
from storage.kernel.shards import Scope
from tasks.common import notify_flow_failure
from tasks.watchdog import (
    WatchdogReport,
    decide_task,
    mark_crashed_task,
    notify_task,
    observe_task,
    publish_report,
    remember_task,
    store_checks_task,
)

FLOW_NAME = "memory-cron-watchdog"


@flow(
    name=FLOW_NAME,
    description="Alerts on paused, failed, stale or late deployments, queue and data quality.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_cron_watchdog(
    as_of: datetime | None = None,
    *,
    dry_run: bool = False,
    deployments: list[str] | None = None,
) -> WatchdogReport:
    """Check every deployment, the queue and data quality; alert after 2 anomalies in a
    row, and mark as crashed the runs whose process is gone.

    Args:
        as_of: Check as if it were this moment (ISO 8601). A time without a zone is read
            in ARCHIVIST_TIMEZONE. Empty: now.
        dry_run: Check and report only: send no alert and remember nothing.
        deployments: Only these deployment names, for example ["memory-sync-daily"].
            Empty: every deployment tagged archivist.
    """
    scope = Scope(dry_run=dry_run)  # its record: the watchdog's state and its report
    with flow_run(FLOW_NAME, as_of, scope, record=False, embedder=False) as run:
        settings, engine, moment = run.settings, run.store.engine, run.as_of
        ws = settings.watchdog
        observed, notes = observe_task(TAG, deployments, moment)
        store_results, store_notes = store_checks_task(engine, settings, ws, moment)
        crashed_notes = [] if dry_run else mark_crashed_task(engine)
        decisions = decide_task(engine, observed, store_results, moment, ws)
        report = WatchdogReport(moment, dry_run, decisions, notes + store_notes + crashed_notes)
        if not dry_run:
            report.channel = notify_task(report.notices, ws, settings.redaction)
            remember_task(engine, decisions, moment)
        publish_report(report)
    return report
