"""Files that outlive a crash of the machine, not only of the process.

On a local disk a write or a rename sits in the page cache until the kernel writes it back,
up to half a minute later. Wherever a file lets the database forget something (archival
deletes hot rows once their Parquet is verified, ``forget`` erases a namespace after its
export, a new ``MEMORY.md`` replaces the old), the file is flushed first: its bytes, then
its name in its directory, and the names of the directories just made for it. On an
object store a PUT that returned is already stored, so ``put`` is one PUT there.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem


def put(fs: AbstractFileSystem, path: str, data: bytes | memoryview) -> None:
    """Write a whole file (the folders it needs are made); on a local disk, durably."""
    if not isinstance(fs, LocalFileSystem):
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, bytes(data))  # one PUT
        return
    make_dirs(os.path.dirname(path))
    fs.pipe_file(path, data)
    sync_file(path)
    sync_dir(os.path.dirname(path))


def replace(fs: AbstractFileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix
    (a temporary file renamed into place locally; one PUT on an object store)."""
    if not isinstance(fs, LocalFileSystem):
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, data)  # object stores replace objects atomically
        return
    parent, name = os.path.split(path)
    make_dirs(parent)
    tmp = os.path.join(parent, f".{name}.{uuid.uuid4().hex}.tmp")
    fs.pipe_file(tmp, data)
    sync_file(tmp)  # else the rename could reach the disk before the bytes it names
    fs.mv(tmp, path)
    sync_dir(parent)


def make_dirs(path: str) -> None:
    """``os.makedirs``, each new directory's name flushed in its parent."""
    missing: list[Path] = []
    folder = Path(path)
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        try:
            new.mkdir()
        except FileExistsError:  # another worker made it meanwhile
            pass
        sync_dir(str(new.parent))


def sync_file(path: str) -> None:
    """Flush a local file's bytes to disk (any descriptor of it will do)."""
    _sync(path, os.O_RDONLY)


def sync_dir(path: str) -> None:
    """Flush the names in a local directory to disk."""
    _sync(path or ".", os.O_RDONLY | os.O_DIRECTORY)


def _sync(path: str, flags: int) -> None:
    handle = os.open(path, flags)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
