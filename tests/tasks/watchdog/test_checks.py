"""The watchdog's checks and alert rule as plain functions, time pinned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage.kernel.settings import WatchdogSettings
from storage.quality_runs import QualityRunRecord
from storage.queue import QueueStats
from storage.watchdog import CheckState
from tasks.common import Notice
from tasks.watchdog import (
    CheckResult,
    DeploymentInfo,
    RunInfo,
    ScheduleInfo,
    check_deployment,
    check_quality,
    check_queue,
    decide,
    expected_interval,
)

T0 = datetime(2026, 11, 20, 10, 15, tzinfo=UTC)
WS = WatchdogSettings(webhook_url=None)
KEY = "memory-sync-daily:last-run"


def deployment(**changes: object) -> DeploymentInfo:
    base: dict[str, object] = {
        "name": "memory-sync-daily",
        "paused": False,
        "created": T0 - timedelta(days=30),
        "schedules": [ScheduleInfo(active=True, cron="0 23 * * *", timezone="UTC")],
        "last_finished": RunInfo("calm-fox", "COMPLETED", "Completed", T0 - timedelta(hours=11)),
        "last_completed_at": T0 - timedelta(hours=11),
        "late_runs": 0,
    }
    return DeploymentInfo(**{**base, **changes})  # type: ignore[arg-type]


def by_key(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.key.split(":")[1]: r for r in results}


@pytest.mark.parametrize(
    ("cron", "tz", "expected"),
    [
        ("0 23 * * *", "UTC", timedelta(days=1)),
        ("15 */2 * * *", "UTC", timedelta(hours=2)),
        ("0 22 * * 0", "Europe/Berlin", timedelta(days=7)),
        ("*/5 * * * *", "UTC", timedelta(minutes=5)),
        ("0 9 * * 1-5", "UTC", timedelta(days=1)),
    ],
)
def test_expected_interval_of_a_cron(cron: str, tz: str, expected: timedelta) -> None:
    assert expected_interval(ScheduleInfo(active=True, cron=cron, timezone=tz), T0) == expected


def test_expected_interval_over_a_weekend() -> None:
    monday = datetime(2026, 11, 23, 9, 10, tzinfo=UTC)
    weekdays = ScheduleInfo(active=True, cron="0 9 * * 1-5", timezone="UTC")
    assert expected_interval(weekdays, monday) == timedelta(days=3)


def test_expected_interval_of_an_interval_schedule() -> None:
    assert expected_interval(ScheduleInfo(active=True, interval_seconds=30), T0) == timedelta(
        seconds=30
    )


def test_a_healthy_deployment_passes_every_check() -> None:
    assert all(r.ok for r in check_deployment(deployment(), T0, WS))


def test_paused_and_inactive_schedules() -> None:
    assert not by_key(check_deployment(deployment(paused=True), T0, WS))["paused"].ok
    off = [ScheduleInfo(active=False, cron="0 23 * * *")]
    result = by_key(check_deployment(deployment(schedules=off), T0, WS))["paused"]
    assert not result.ok
    assert "1 of 1 schedules inactive" in result.summary


@pytest.mark.parametrize(
    ("state", "ok"), [("FAILED", False), ("CRASHED", False), ("COMPLETED", True)]
)
def test_last_run_state(state: str, *, ok: bool) -> None:
    run = RunInfo("sad-owl", state, state.title(), T0 - timedelta(hours=1))
    result = by_key(check_deployment(deployment(last_finished=run), T0, WS))["last-run"]
    assert result.ok is ok
    assert result.snapshot["run"] == "sad-owl"


def test_a_run_outside_any_deployment_says_so() -> None:
    by_hand = RunInfo("calm-fox", "COMPLETED", "Completed", T0, by_deployment=False)
    result = by_key(check_deployment(deployment(last_finished=by_hand), T0, WS))["last-run"]
    assert result.summary == "last run calm-fox (no deployment): Completed"
    assert result.snapshot["by_deployment"] is False


def test_stale_after_interval_plus_grace() -> None:
    limit = timedelta(days=1, minutes=30)
    fresh = deployment(last_completed_at=T0 - limit)
    stale = deployment(last_completed_at=T0 - limit - timedelta(minutes=1))
    assert by_key(check_deployment(fresh, T0, WS))["stale"].ok
    result = by_key(check_deployment(stale, T0, WS))["stale"]
    assert not result.ok
    assert result.snapshot["allowed_hours"] == 24.5


def test_never_completed_is_stale_once_old_enough() -> None:
    young = deployment(last_completed_at=None, created=T0 - timedelta(hours=2))
    old = deployment(last_completed_at=None, created=T0 - timedelta(days=3))
    assert by_key(check_deployment(young, T0, WS))["stale"].ok
    assert not by_key(check_deployment(old, T0, WS))["stale"].ok


def test_no_schedule_is_never_stale() -> None:
    result = by_key(check_deployment(deployment(schedules=[], last_completed_at=None), T0, WS))
    assert result["stale"].ok


def test_late_runs_above_threshold() -> None:
    assert by_key(check_deployment(deployment(late_runs=3), T0, WS))["late"].ok
    assert not by_key(check_deployment(deployment(late_runs=4), T0, WS))["late"].ok


def stats(**changes: object) -> QueueStats:
    base: dict[str, object] = {
        "pending": 0,
        "ready": 0,
        "processing": 0,
        "stuck": 0,
        "abandoned": 0,
        "completed": 0,
        "dead": 0,
        "oldest_pending_seconds": None,
    }
    return QueueStats(**{**base, **changes})  # type: ignore[arg-type]


def test_queue_checks() -> None:
    assert all(r.ok for r in check_queue(stats(), WS))
    bad = by_key(check_queue(stats(stuck=1, dead=2, oldest_pending_seconds=31 * 60.0), WS))
    assert not bad["stuck"].ok and not bad["dead"].ok and not bad["oldest-pending"].ok
    assert bad["dead"].snapshot["dead"] == 2
    gone = by_key(check_queue(stats(processing=3, abandoned=3), WS))["stuck"]
    assert (
        not gone.ok
        and gone.summary == "0 items stuck in processing, 3 held by workers that are gone"
    )


def test_quality_check() -> None:
    assert check_quality(None).ok
    failed = QualityRunRecord(
        T0,
        {},
        success=False,
        critical_failures=3,
        data_docs_uri=None,
        flow_run_id=None,
        run_at=T0,
        id=7,
    )
    result = check_quality(failed)
    assert not result.ok
    assert "3 critical" in result.summary


def run(results: list[bool], start: datetime = T0, step: timedelta = timedelta(hours=2)):
    """Feed a sequence of OK/anomaly results; returns every pass's (state, notice)."""
    state: CheckState | None = None
    out: list[tuple[CheckState, Notice | None]] = []
    for i, ok in enumerate(results):
        state, notice = decide(state, CheckResult(KEY, ok, f"pass {i}"), start + i * step, WS)
        out.append((state, notice))
    return out


def test_one_anomaly_is_no_alert() -> None:
    [(state, notice)] = run([False])
    assert notice is None
    assert state.anomaly_count == 1 and not state.alerting


def test_two_anomalies_give_one_alert_with_the_last_three_snapshots() -> None:
    passes = run([True, True, False, False])
    notices = [n for _, n in passes if n is not None]
    assert [n.kind for n in notices] == ["alert"]
    assert [s["summary"] for s in notices[0].snapshots] == ["pass 1", "pass 2", "pass 3"]
    assert notices[0].anomaly_count == 2


def test_reminder_only_after_the_reminder_interval() -> None:
    passes = run([False] * 16)  # every 2 h: alert at pass 1, 24 h later at pass 13
    kinds = [(i, n.kind) for i, (_, n) in enumerate(passes) if n is not None]
    assert kinds == [(1, "alert"), (13, "reminder")]


def test_recovery_notice_once_when_an_alerted_check_clears() -> None:
    passes = run([False, False, True, True])
    assert [n.kind if n else None for _, n in passes] == [None, "alert", "recovery", None]
    assert passes[2][0].anomaly_count == 0


def test_clearing_before_the_alert_sends_nothing() -> None:
    passes = run([False, True, False])
    assert all(n is None for _, n in passes)
    assert passes[2][0].anomaly_count == 1


def test_the_report_ends_at_its_last_row_or_note() -> None:
    from tasks.watchdog import Decision, WatchdogReport

    ok = CheckResult("queue:dead", ok=True, summary="0 dead items")
    decision = Decision(ok, CheckState("queue:dead"), None)
    quiet = WatchdogReport(T0, dry_run=True, decisions=[decision]).markdown()
    noted = WatchdogReport(T0, dry_run=True, decisions=[decision], notes=["no store"]).markdown()

    assert quiet.splitlines()[-1] == "| queue:dead | ok | 0 | 0 dead items |  |"
    assert not quiet.endswith("\n")  # a trailing line is drawn as one more, empty table row
    assert noted.splitlines()[-2:] == ["", "- note: no store"]
