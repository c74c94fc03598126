"""Thin Prefect tasks over the watchdog's plain functions: retries on I/O, logging."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from sqlalchemy import Engine

from storage.kernel.settings import RedactionSettings, Settings, WatchdogSettings
from tasks.common import IO_RETRY, Channel, Notice, open_notifier
from tasks.watchdog._checks import CheckResult, DeploymentInfo
from tasks.watchdog._run import (
    Decision,
    WatchdogReport,
    all_checks,
    decide_all,
    mark_crashed_runs,
    observe_deployments,
    remember,
    store_checks,
)

REPORT_KEY = "memory-cron-watchdog-report"


@task(name="observe-deployments", cache_policy=NO_CACHE, **IO_RETRY)
def observe_task(
    tag: str, names: Sequence[str] | None, as_of: datetime
) -> tuple[list[DeploymentInfo], list[str]]:
    with get_client(sync_client=True) as client:
        return observe_deployments(client, tag, names, as_of)


@task(name="store-checks", cache_policy=NO_CACHE, **IO_RETRY)
def store_checks_task(
    engine: Engine, settings: Settings, ws: WatchdogSettings, as_of: datetime
) -> tuple[list[CheckResult], list[str]]:
    return store_checks(engine, settings, ws, as_of)


@task(name="mark-crashed-runs", cache_policy=NO_CACHE, **IO_RETRY)
def mark_crashed_task(engine: Engine) -> list[str]:
    notes = mark_crashed_runs(engine)
    for note in notes:
        get_run_logger().warning("%s", note)
    return notes


@task(name="decide", cache_policy=NO_CACHE)
def decide_task(
    engine: Engine,
    deployments: list[DeploymentInfo],
    store_results: list[CheckResult],
    as_of: datetime,
    ws: WatchdogSettings,
) -> list[Decision]:
    return decide_all(engine, all_checks(deployments, store_results, as_of, ws), as_of, ws)


@task(
    name="notify",
    cache_policy=NO_CACHE,
    retries=0,
)
def notify_task(
    notices: list[Notice], ws: WatchdogSettings, redaction: RedactionSettings | None = None
) -> Channel:
    # The notifier retries the webhook itself (with backoff); a retry here would resend
    # notices that already arrived.
    with open_notifier(ws, get_run_logger(), redaction) as notifier:
        return notifier.publish(notices)


@task(name="remember", cache_policy=NO_CACHE, **IO_RETRY)
def remember_task(engine: Engine, decisions: list[Decision], as_of: datetime) -> None:
    remember(engine, decisions, as_of)


@task(name="publish-report", cache_policy=NO_CACHE)
def publish_report(report: WatchdogReport) -> None:
    get_run_logger().info(
        "%d checks, %d anomalies, %d notices (%s)",
        len(report.decisions),
        len(report.anomalies),
        len(report.notices),
        report.channel,
    )
    create_markdown_artifact(key=REPORT_KEY, markdown=report.markdown())
