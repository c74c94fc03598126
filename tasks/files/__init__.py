"""Memory files under one fsspec root, written so that they outlive a crash of the machine."""

from tasks.files import _durable as durable
from tasks.files._memory_files import (
    MemoryRoot,
    append_blocks,
    atomic_write,
    block_marker,
    daily_log_path,
    open_memory_root,
    read_text,
    sweep_temporaries,
    task_cards_path,
)

__all__ = [
    "MemoryRoot",
    "append_blocks",
    "atomic_write",
    "block_marker",
    "daily_log_path",
    "durable",
    "open_memory_root",
    "read_text",
    "sweep_temporaries",
    "task_cards_path",
]
