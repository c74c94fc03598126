"""``memory-cron-watchdog``'s work: checks, the 2-hit alert rule, what Prefect says."""

from tasks.watchdog._alerts import decide
from tasks.watchdog._checks import (
    CheckResult,
    DeploymentInfo,
    RunInfo,
    ScheduleInfo,
    check_deployment,
    check_quality,
    check_queue,
    expected_interval,
)
from tasks.watchdog._run import Decision, WatchdogReport, store_checks
from tasks.watchdog._steps import (
    decide_task,
    mark_crashed_task,
    notify_task,
    observe_task,
    publish_report,
    remember_task,
    store_checks_task,
)

__all__ = [
    "CheckResult",
    "Decision",
    "DeploymentInfo",
    "RunInfo",
    "ScheduleInfo",
    "WatchdogReport",
    "check_deployment",
    "check_quality",
    "check_queue",
    "decide",
    "decide_task",
    "expected_interval",
    "mark_crashed_task",
    "notify_task",
    "observe_task",
    "publish_report",
    "remember_task",
    "store_checks",
    "store_checks_task",
]
