"""Memory files under one fsspec root: ``<root>/<namespace>/memory/...`` (DESIGN.md).

Files are a view of the database. Writes replace the whole object atomically (a temporary
file renamed into place locally; a single PUT on an object store), so a reader never sees
half a file and a crash never truncates one; the temporary copy a killed write leaves is
swept by the next write to its folder (``_temporary``). Daily logs and task files only
ever grow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import fsspec
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from storage.kernel.settings import Settings
from tasks.files import durable as durable
from tasks.files._temporary import sweep


@dataclass(frozen=True)
class MemoryRoot:
    """A filesystem and the root path of the memory files on it."""

    fs: AbstractFileSystem
    root: str

    def path(self, relative: str) -> str:
        return f"{self.root.rstrip('/')}/{relative}"


def open_memory_root(settings: Settings) -> MemoryRoot:
    """The configured memory root (a local folder by default, or any fsspec URL)."""
    fs, root = fsspec.core.url_to_fs(settings.memory_root_url, **settings.storage_options)
    return MemoryRoot(fs=fs, root=root)


def daily_log_path(namespace: str, day: date) -> str:
    return f"{namespace}/memory/{day:%Y-%m-%d}.md"


def task_cards_path(namespace: str, day: date) -> str:
    return f"{namespace}/memory/tasks/{day:%Y-%m-%d}.md"


def daily_header(namespace: str, day: date) -> str:
    return f"# Memory log · {namespace} · {day:%Y-%m-%d}\n"


def tasks_header(namespace: str, day: date) -> str:
    return f"# Task cards · {namespace} · {day:%Y-%m-%d}\n"


def block_marker(block_key: str) -> str:
    """The line that identifies a block inside its file."""
    return f"<!-- archivist:block {block_key} -->"


def atomic_write(fs: AbstractFileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix,
    and a crash of the machine leaves one of them whole."""
    durable.replace(fs, path, data)


def sweep_temporaries(root: MemoryRoot, relative: str) -> list[str]:
    """Remove from a memory folder the temporary copies that killed writes left; returns
    their names (an object store has none: a write there is one PUT)."""
    if not isinstance(root.fs, LocalFileSystem):
        return []
    return sweep(root.path(relative))


def read_text(fs: AbstractFileSystem, path: str) -> str | None:
    """The file's text, or None if it does not exist."""
    try:
        data: bytes = fs.cat_file(path)
    except FileNotFoundError:
        return None
    return data.decode("utf-8")


def append_blocks(
    root: MemoryRoot, relative: str, header: str, blocks: Sequence[tuple[str, str]]
) -> int:
    """Append each (block_key, text) not already in the file; returns how many were added."""
    path = root.path(relative)
    existing = read_text(root.fs, path)
    text = header if existing is None else existing
    added = 0
    for key, block in blocks:
        if block_marker(key) in text:
            continue  # written by an earlier, interrupted run
        text = f"{text.rstrip(chr(10))}\n\n{block.strip()}\n"
        added += 1
    if added:
        atomic_write(root.fs, path, text.encode("utf-8"))
    return added
