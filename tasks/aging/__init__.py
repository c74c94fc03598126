"""``memory-aging``'s work: salience decay, compression, archival to the cold tier, deletion,
and the access log's window."""

from tasks.aging._archival import archive_old, by_year, commit_part, verify_part, write_part
from tasks.aging._bulk_memory import bulk_memory, glibc
from tasks.aging._cold_store import (
    ColdStore,
    Scratch,
    memories_part,
    namespace_folders,
    open_cold_store,
)
from tasks.aging._compression import compress_old, write_transcripts
from tasks.aging._run import AgingReport, cutoffs, decay, delete_old, prune_access_log
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
    "Scratch",
    "archive_old",
    "archive_task",
    "bulk_memory",
    "by_year",
    "commit_part",
    "compress_old",
    "compress_task",
    "cutoffs",
    "decay",
    "decay_task",
    "delete_old",
    "delete_task",
    "glibc",
    "memories_part",
    "namespace_folders",
    "open_cold_store",
    "prune_access_log",
    "take_out_all",
    "timed",
    "verify_part",
    "write_part",
    "write_transcripts",
]
