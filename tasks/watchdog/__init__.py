"""``memory-cron-watchdog``'s work: checks, the 2-hit alert rule, what Prefect says."""

from tasks.watchdog._run import WatchdogReport
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
    "WatchdogReport",
    "decide_task",
    "mark_crashed_task",
    "notify_task",
    "observe_task",
    "publish_report",
    "remember_task",
    "store_checks_task",
]
