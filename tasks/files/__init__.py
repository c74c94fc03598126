"""Memory files under one fsspec root, written so that they outlive a crash of the machine,
and the outbox that delivers their blocks and timeline lines exactly once."""

from tasks.files import durable as durable
from tasks.files._markdown import inline as md_inline
from tasks.files._markdown import line as md_line
from tasks.files._memory_files import (
    MemoryRoot,
    append_blocks,
    atomic_write,
    block_marker,
    daily_header,
    daily_log_path,
    open_memory_root,
    read_text,
    sweep_temporaries,
    task_cards_path,
    tasks_header,
)
from tasks.files._outbox import FlushOutcome, append_to_file, flush_blocks, header_for
from tasks.files._timeline import (
    TIMELINE,
    drop_session_lines,
    line_marker,
    timeline_block,
    timeline_line,
    timeline_path,
    utc_iso,
)

__all__ = [
    "TIMELINE",
    "FlushOutcome",
    "MemoryRoot",
    "append_blocks",
    "append_to_file",
    "atomic_write",
    "block_marker",
    "daily_header",
    "daily_log_path",
    "drop_session_lines",
    "durable",
    "flush_blocks",
    "header_for",
    "line_marker",
    "md_inline",
    "md_line",
    "open_memory_root",
    "read_text",
    "sweep_temporaries",
    "task_cards_path",
    "tasks_header",
    "timeline_block",
    "timeline_line",
    "timeline_path",
    "utc_iso",
]
