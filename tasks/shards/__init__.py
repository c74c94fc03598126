"""A run split into shards: fan the shards out as deployment runs, wait, sum the reports."""

from tasks.shards._fan_out import fan_out_task, wait_task
from tasks.shards._report import ShardedReport, ShardRun, collect_task, sum_reports

__all__ = [
    "ShardRun",
    "ShardedReport",
    "collect_task",
    "fan_out_task",
    "sum_reports",
    "wait_task",
]
