"""Deliver queued file blocks to the memory files, exactly once each.

Markdown blocks (daily logs, task cards) and timeline lines (``timeline.jsonl``) go the
same way: read pending from ``storage.blocks``, appended unless their file already holds
them, then marked written, under the file's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import blocks
from storage.kernel.shards import Shard
from tasks.files._memory_files import MemoryRoot, append_blocks, daily_header, tasks_header
from tasks.files._timeline import TIMELINE, append_lines


@dataclass
class FlushOutcome:
    """How many blocks reached which files."""

    blocks_appended: int = 0
    blocks_already_present: int = 0
    files: list[str] = field(default_factory=list)


def header_for(path: str) -> str:
    """The header a new Markdown memory file starts with, from its path."""
    namespace, _, rest = path.partition("/")
    day = date.fromisoformat(rest.rsplit("/", 1)[-1].removesuffix(".md"))
    return tasks_header(namespace, day) if "/tasks/" in path else daily_header(namespace, day)


def append_to_file(root: MemoryRoot, path: str, items: Sequence[tuple[str, str]]) -> int:
    """Append the (block_key, content) items its file does not hold yet; how many were."""
    if path.endswith(f"/{TIMELINE}"):
        return append_lines(root, path, items)
    return append_blocks(root, path, header_for(path), items)


def flush_blocks(
    engine: Engine,
    root: MemoryRoot,
    namespace: str | None = None,
    on_file: Callable[[str], None] | None = None,
    shard: Shard | None = None,
) -> FlushOutcome:
    """Append every pending block (of a namespace or a shard) to its file, then mark it
    written: one file at a time, each under its lock (``storage.blocks.lock_path``)."""
    with Session(engine) as session:
        paths = blocks.pending_paths(session, namespace, shard)
    outcome = FlushOutcome()
    for path in paths:
        with Session(engine) as session, session.begin():
            blocks.lock_path(session, path)
            items = blocks.pending_blocks(session, path=path)  # what no other writer took
            added = append_to_file(root, path, [(b.block_key, b.content) for b in items])
            blocks.mark_written(session, [b.id for b in items])
        if not items:
            continue
        outcome.blocks_appended += added
        outcome.blocks_already_present += len(items) - added
        outcome.files.append(path)
        if on_file is not None:
            on_file(path)
    return outcome
