"""The watchdog's checks (seed 004) as plain functions: observations in, results out.

Each check returns a ``CheckResult`` keyed ``<deployment>:<check>`` or ``queue:<check>``
or ``quality:last-run``; its snapshot is what the alert shows of that moment.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from storage.kernel.settings import WatchdogSettings
from storage.quality_runs import QualityRunRecord
from storage.queue import QueueStats

FAILED_TYPES = frozenset({"FAILED", "CRASHED"})
# The croniter Prefect's own scheduler uses (vendored, untyped): same cron semantics.
_croniter: Any = importlib.import_module("prefect._vendor.croniter").croniter


@dataclass(frozen=True)
class CheckResult:
    """One check at one moment: OK or not, a one-line summary, and its data."""

    key: str
    ok: bool
    summary: str
    snapshot: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScheduleInfo:
    """A deployment schedule as the API reports it."""

    active: bool
    cron: str | None = None
    interval_seconds: float | None = None
    timezone: str | None = None


@dataclass(frozen=True)
class RunInfo:
    """A flow run, reduced to what the checks read."""

    name: str
    state_type: str
    state_name: str
    end_time: datetime | None
    by_deployment: bool = True  # False: run by hand (the CLI, the demo) or as a subflow


@dataclass(frozen=True)
class DeploymentInfo:
    """What the Prefect API says about one deployment as of the watchdog's time."""

    name: str
    paused: bool
    created: datetime | None
    schedules: list[ScheduleInfo]
    last_finished: RunInfo | None
    last_completed_at: datetime | None
    late_runs: int


def _stamp(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def expected_interval(schedule: ScheduleInfo, as_of: datetime) -> timedelta | None:
    """Gap between a schedule's two latest fire times at or before ``as_of``."""
    if schedule.interval_seconds is not None:
        return timedelta(seconds=schedule.interval_seconds)
    if schedule.cron is None:
        return None
    local = as_of.astimezone(ZoneInfo(schedule.timezone or "UTC"))
    fires = _croniter(schedule.cron, local)
    last: datetime = fires.get_prev(datetime)
    before: datetime = fires.get_prev(datetime)
    return last - before


def check_paused(dep: DeploymentInfo) -> CheckResult:
    """Paused deployment, or a schedule switched off."""
    inactive = sum(1 for s in dep.schedules if not s.active)
    ok = not dep.paused and inactive == 0
    summary = (
        "active"
        if ok
        else f"{dep.name} is paused"
        if dep.paused
        else f"{dep.name}: {inactive} of {len(dep.schedules)} schedules inactive"
    )
    snapshot = {"paused": dep.paused, "inactive_schedules": inactive}
    return CheckResult(f"{dep.name}:paused", ok, summary, snapshot)


def check_last_run(dep: DeploymentInfo) -> CheckResult:
    """The newest finished run Failed or Crashed."""
    run = dep.last_finished
    ok = run is None or run.state_type not in FAILED_TYPES
    summary = "no finished run yet"
    snapshot: dict[str, Any] = {}
    if run is not None:
        outside = "" if run.by_deployment else " (no deployment)"
        summary = f"last run {run.name}{outside}: {run.state_name}"
        snapshot = {
            "run": run.name,
            "state": run.state_name,
            "ended": _stamp(run.end_time),
            "by_deployment": run.by_deployment,
        }
    if not ok:
        summary = f"{dep.name}: {summary}"
    return CheckResult(f"{dep.name}:last-run", ok, summary, snapshot)


def check_stale(dep: DeploymentInfo, as_of: datetime, grace: timedelta) -> CheckResult:
    """No Completed run within the schedule's interval plus grace (the first schedule)."""
    key = f"{dep.name}:stale"
    active = [s for s in dep.schedules if s.active]
    interval = expected_interval(active[0], as_of) if active else None
    if interval is None:
        return CheckResult(key, ok=True, summary="no active schedule; staleness not checked")
    allowed = interval + grace
    since = dep.last_completed_at or dep.created
    age = None if since is None else as_of - since
    ok = age is None or age <= allowed
    what = "last completed run" if dep.last_completed_at else "created, never completed,"
    summary = f"{what} {_hours(age)} ago; allowed {_hours(allowed)}"
    snapshot = {
        "last_completed": _stamp(dep.last_completed_at),
        "age_hours": None if age is None else round(age.total_seconds() / 3600, 2),
        "allowed_hours": round(allowed.total_seconds() / 3600, 2),
    }
    return CheckResult(key, ok, summary if ok else f"{dep.name} is stale: {summary}", snapshot)


def _hours(delta: timedelta | None) -> str:
    return "?" if delta is None else f"{delta.total_seconds() / 3600:.1f} h"


def check_late(dep: DeploymentInfo, threshold: int) -> CheckResult:
    """Scheduled runs whose start time has passed are piling up (nobody runs them)."""
    ok = dep.late_runs <= threshold
    summary = f"{dep.late_runs} late runs (threshold {threshold})"
    snapshot = {"late_runs": dep.late_runs}
    return CheckResult(
        f"{dep.name}:late", ok, summary if ok else f"{dep.name}: {summary}", snapshot
    )


def check_deployment(
    dep: DeploymentInfo, as_of: datetime, ws: WatchdogSettings
) -> list[CheckResult]:
    """Every check of one deployment."""
    grace = timedelta(minutes=ws.stale_grace_minutes)
    return [
        check_paused(dep),
        check_last_run(dep),
        check_stale(dep, as_of, grace),
        check_late(dep, ws.late_runs_threshold),
    ]


def check_queue(stats: QueueStats, ws: WatchdogSettings) -> list[CheckResult]:
    """Stuck or abandoned (worker gone), dead and long-waiting items of the write queue."""
    snapshot = stats.as_dict()
    oldest_min = (stats.oldest_pending_seconds or 0.0) / 60
    return [
        CheckResult(
            "queue:stuck",
            stats.stuck + stats.abandoned < ws.queue_stuck_alert,
            f"{stats.stuck} items stuck in processing, "
            f"{stats.abandoned} held by workers that are gone",
            snapshot,
        ),
        CheckResult(
            "queue:dead", stats.dead < ws.queue_dead_alert, f"{stats.dead} dead items", snapshot
        ),
        CheckResult(
            "queue:oldest-pending",
            oldest_min <= ws.queue_oldest_pending_minutes,
            f"oldest pending item waits {oldest_min:.0f} min "
            f"(limit {ws.queue_oldest_pending_minutes:.0f})",
            snapshot,
        ),
    ]


def check_quality(latest: QualityRunRecord | None) -> CheckResult:
    """The newest data-quality run succeeded (no run yet counts as OK)."""
    if latest is None:
        return CheckResult("quality:last-run", ok=True, summary="no quality run yet")
    ok = latest.success
    snapshot = {
        "quality_run": latest.id,
        "run_at": _stamp(latest.run_at),
        "critical_failures": latest.critical_failures,
        "data_docs": latest.data_docs_uri,
    }
    summary = (
        "last quality run passed"
        if ok
        else f"last quality run failed: {latest.critical_failures} critical expectations"
    )
    return CheckResult("quality:last-run", ok, summary, snapshot)
