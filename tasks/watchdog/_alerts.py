"""When a check result becomes a notice: the 2-hit rule, reminders and recoveries.

    anomaly: count += 1 --count == alert_after--> alert (alerting, last_alert_at = as_of)
             alerting and as_of - last_alert_at >= reminder_hours --> reminder
    ok:      count = 0 --was alerting--> recovery notice

Every snapshot goes into ``last3`` (the newest 3, OK ones included), which each notice
carries, so an alert shows the run-up to it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from storage.kernel.settings import WatchdogSettings
from storage.watchdog import CheckState
from tasks.common import Notice, NoticeKind
from tasks.watchdog._checks import CheckResult


def snapshot_of(result: CheckResult, as_of: datetime) -> dict[str, Any]:
    """The stored picture of one result: time, status, summary and the check's data."""
    return {
        "at": as_of.isoformat(),
        "status": "ok" if result.ok else "anomaly",
        "summary": result.summary,
        **result.snapshot,
    }


def decide(
    previous: CheckState | None, result: CheckResult, as_of: datetime, ws: WatchdogSettings
) -> tuple[CheckState, Notice | None]:
    """The check's next state, and the notice to send now, if any."""
    before = previous or CheckState(check_key=result.key)
    last3 = [*before.last3, snapshot_of(result, as_of)][-3:]
    if result.ok:
        state = replace(before, anomaly_count=0, alerting=False, last_status="ok", last3=last3)
        notice = _notice("recovery", result, as_of, last3, 0) if before.alerting else None
        return state, notice
    count = before.anomaly_count + 1
    state = replace(before, anomaly_count=count, last_status="anomaly", last3=last3)
    kind = _anomaly_notice_kind(state, as_of, ws)
    if kind is None:
        return state, None
    state = replace(state, alerting=True, last_alert_at=as_of)
    return state, _notice(kind, result, as_of, last3, count)


def _anomaly_notice_kind(
    state: CheckState, as_of: datetime, ws: WatchdogSettings
) -> NoticeKind | None:
    if not state.alerting:
        return "alert" if state.anomaly_count >= ws.alert_after else None
    due = state.last_alert_at is None or as_of - state.last_alert_at >= timedelta(
        hours=ws.reminder_hours
    )
    return "reminder" if due else None


def _notice(
    kind: NoticeKind,
    result: CheckResult,
    as_of: datetime,
    last3: list[dict[str, Any]],
    count: int,
) -> Notice:
    status = "ok" if result.ok else "anomaly"
    return Notice(kind, result.key, status, result.summary, as_of, list(last3), count)
