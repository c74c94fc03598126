"""Files that outlive a crash of the machine, not only of the process.

On a local disk a write or a rename sits in the page cache until the kernel writes it back,
up to half a minute later. Wherever a file lets the database forget something (archival
deletes hot rows once their Parquet is verified, ``forget`` erases a namespace after its
export, a new ``MEMORY.md`` replaces the old), the file is flushed first: its bytes, then
its name in its directory, and the names of the directories just made for it. On an
object store a PUT that returned is already stored, so ``put`` is one PUT there.

Big files (archival's Parquet) go past the page cache where the filesystem allows it
(``O_DIRECT``): from the caller's block-aligned buffer straight to the disk, and read back
from the disk, not from a copy in memory, when verified. Through the page cache, each
byte was copied into memory the kernel had to map afresh, about a tenth of archival's
time.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from tasks.files._temporary import sweep, temporary_path


def put(fs: AbstractFileSystem, path: str, data: bytes | memoryview, *, flush: bool = True) -> None:
    """Write a whole file (the folders it needs are made); on a local disk, durably, or
    with ``flush=False`` not yet: ``flush_all`` the files of a batch before relying on them
    (many small files are flushed for far fewer disk flushes together than one by one)."""
    if not isinstance(fs, LocalFileSystem):
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, bytes(data))  # one PUT
        return
    make_dirs(os.path.dirname(path))
    fs.pipe_file(path, data)
    if flush:
        flush_all(fs, [path])


def flush_all(fs: AbstractFileSystem, paths: Sequence[str]) -> None:
    """Make files written with ``flush=False`` durable: each file's bytes, then each of
    their folders once (nothing to do on an object store)."""
    if not isinstance(fs, LocalFileSystem):
        return
    for path in paths:
        sync_file(path)
    for folder in sorted({os.path.dirname(path) for path in paths}):
        sync_dir(folder)


# Direct I/O moves whole blocks of the device, from and to block-aligned memory; 4 KiB is a
# multiple of every common block size.
BLOCK = 4096
_DIRECT = getattr(os, "O_DIRECT", 0)  # Linux


def put_blocks(
    fs: AbstractFileSystem, path: str, blocks: memoryview, size: int, *, flush: bool = True
) -> None:
    """``put`` of ``blocks[:size]``, where ``blocks`` starts on a block boundary and holds
    at least ``size`` rounded up to whole blocks: locally, written straight to the disk."""
    end = -(-size // BLOCK) * BLOCK
    if not (isinstance(fs, LocalFileSystem) and _DIRECT and aligned(blocks) and end <= len(blocks)):
        put(fs, path, blocks[:size], flush=flush)
        return
    make_dirs(os.path.dirname(path))
    try:
        _write_direct(path, blocks[:end], size)
    except OSError as exc:  # a filesystem without direct I/O (tmpfs, some network ones)
        if exc.errno != errno.EINVAL:
            raise
        put(fs, path, blocks[:size], flush=flush)
        return
    if flush:
        flush_all(fs, [path])


def _write_direct(path: str, blocks: memoryview, size: int) -> None:
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _DIRECT, 0o666)
    try:
        rest = blocks
        while rest:
            rest = rest[os.write(handle, rest) :]
        os.ftruncate(handle, size)  # the last block was written whole
    finally:
        os.close(handle)


def read_pieces(path: str, into: memoryview) -> Iterator[memoryview]:
    """A local file's bytes, read into ``into`` piece by piece (each piece valid until the
    next): from the disk itself if ``into`` is block-aligned and the filesystem allows."""
    flags = os.O_RDONLY | (_DIRECT if aligned(into) and len(into) % BLOCK == 0 else 0)
    try:
        handle = os.open(path, flags)
    except OSError as exc:
        if exc.errno != errno.EINVAL or flags == os.O_RDONLY:
            raise
        handle = os.open(path, os.O_RDONLY)
    try:
        while count := os.readv(handle, [into]):
            yield into[:count]
    finally:
        os.close(handle)


def aligned(memory: memoryview) -> bool:
    """Whether the memory starts on a block boundary."""
    address: int = np.frombuffer(memory, dtype=np.uint8).__array_interface__["data"][0]
    return address % BLOCK == 0


def replace(fs: AbstractFileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix
    (a temporary file renamed into place locally, then the folder swept of temporary
    files that killed writers left; one PUT on an object store)."""
    if not isinstance(fs, LocalFileSystem):
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, data)  # object stores replace objects atomically
        return
    parent = os.path.dirname(path)
    make_dirs(parent)
    tmp = temporary_path(path)
    fs.pipe_file(tmp, data)
    sync_file(tmp)  # else the rename could reach the disk before the bytes it names
    fs.mv(tmp, path)
    sync_dir(parent)
    sweep(parent)  # what a writer killed before its rename left here


def append(path: str, data: bytes, *, drop_from: int | None = None) -> None:
    """Add ``data`` at the end of a local file, durably: one write, then its bytes flushed
    (and its name, if the file is new). With ``drop_from``, the file is first cut back to
    that length (a torn last line). What was there is never rewritten, so the cost of an
    append is the size of what is added, not of the file."""
    parent = os.path.dirname(path)
    make_dirs(parent)
    new = not os.path.exists(path)
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        if drop_from is not None:
            os.ftruncate(handle, drop_from)
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        os.fsync(handle)
    finally:
        os.close(handle)
    if new:
        sync_dir(parent)


def read_tail(path: str, size: int) -> tuple[int, bytes]:
    """The file's length and at most its last ``size`` bytes ((0, b"") if it is missing)."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return 0, b""
    try:
        length = os.fstat(handle).st_size
        start = max(0, length - size)
        return length, os.pread(handle, length - start, start)
    finally:
        os.close(handle)


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
