"""``memory-aging``'s work: salience decay, compression, archival to the cold tier, deletion,
and the access log's window."""

from tasks.aging._cold_store import ColdStore, namespace_folders, open_cold_store
from tasks.aging._run import AgingReport, cutoffs
from tasks.aging._steps import (
    access_log_task,
    archive_task,
    compress_task,
    decay_task,
    delete_task,
    timed,
)
from tasks.aging._take_out import take_out_all

__all__ = [
    "AgingReport",
    "access_log_task",
    "ColdStore",
    "archive_task",
    "compress_task",
    "cutoffs",
    "decay_task",
    "delete_task",
    "namespace_folders",
    "open_cold_store",
    "take_out_all",
    "timed",
]
