"""The session flows' work: ingest transcripts, plan, extract and write, the files, the report."""

from tasks.files import FlushOutcome
from tasks.sync._process import PART_SESSIONS, plan_sync, process_batch
from tasks.sync._redacted import RedactedSource, stored_source
from tasks.sync._report import SyncReport, SyncWork, build_report, skipped, touched_namespaces
from tasks.sync._steps import (
    SESSIONS,
    build_context,
    ingest_task,
    plan_task,
    process_batch_task,
    process_isolated,
    write_files_task,
)
from tasks.sync._transcripts import (
    IngestReport,
    JsonlTranscripts,
    Problem,
    Transcript,
    decode,
    ingest,
    not_utf8,
    parse_transcript,
    split_lines,
)
from tasks.sync._types import BatchOutcome, SyncContext, SyncOptions, SyncPlan

__all__ = [
    "PART_SESSIONS",
    "BatchOutcome",
    "FlushOutcome",
    "IngestReport",
    "JsonlTranscripts",
    "Problem",
    "RedactedSource",
    "SESSIONS",
    "SyncContext",
    "SyncOptions",
    "SyncPlan",
    "SyncReport",
    "SyncWork",
    "Transcript",
    "build_context",
    "build_report",
    "decode",
    "ingest",
    "ingest_task",
    "not_utf8",
    "parse_transcript",
    "plan_sync",
    "plan_task",
    "process_batch",
    "process_batch_task",
    "process_isolated",
    "skipped",
    "split_lines",
    "stored_source",
    "touched_namespaces",
    "write_files_task",
]
