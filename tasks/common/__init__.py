"""What every flow's steps share: open the store, record the run, retries, failure notices."""

from tasks.common._notice import Notice, NoticeKind
from tasks.common._notify import ARTIFACT_KEY, Channel, Notifier, notify_flow_failure, open_notifier
from tasks.common._retry import IO_RETRY
from tasks.common._steps import (
    RunReport,
    connect_task,
    finish_run,
    fold_access_task,
    open_store_task,
    pseudonyms_task,
    publish_report,
    start_run,
)
from tasks.common._time import readable

__all__ = [
    "ARTIFACT_KEY",
    "Channel",
    "IO_RETRY",
    "Notice",
    "NoticeKind",
    "Notifier",
    "RunReport",
    "connect_task",
    "finish_run",
    "fold_access_task",
    "notify_flow_failure",
    "open_notifier",
    "open_store_task",
    "pseudonyms_task",
    "publish_report",
    "readable",
    "start_run",
]
