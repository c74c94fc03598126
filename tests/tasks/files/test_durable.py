"""Files written durably are on disk when the call returns: no page of them is dirty.

The kernel's own count, per file, through the ``cachestat`` system call (Linux 6.5).
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem

from tasks.files import durable as durable

_CACHESTAT = 451  # the same number on x86-64 and arm64
_libc = ctypes.CDLL(None, use_errno=True)


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("cache", "dirty", "writeback", "evicted", "recently_evicted")
    ]


@pytest.fixture
def tmp_path(disk_path: Path) -> Path:
    """This module's files go to the disk: the tests' usual folders live in memory, which
    keeps no dirty page and takes no ``O_DIRECT``."""
    return disk_path


def _cachestat(path: Path) -> _Stat:
    """The kernel's count of the file's pages in memory, whole file."""
    stat, handle = _Stat(), os.open(path, os.O_RDONLY)
    try:
        whole = _Range(0, 0)
        if _libc.syscall(_CACHESTAT, handle, ctypes.byref(whole), ctypes.byref(stat), 0) != 0:
            raise OSError(ctypes.get_errno(), "cachestat (Linux 6.5 or later) failed")
    finally:
        os.close(handle)
    return stat


def unwritten_pages(path: Path) -> int:
    """Pages of the file in memory that are not on disk yet (dirty or being written)."""
    stat = _cachestat(path)
    return int(stat.dirty + stat.writeback)


def cached_pages(path: Path) -> int:
    """Pages of the file in memory's file cache."""
    return int(_cachestat(path).cache)


DATA = os.urandom(4 << 20)


def test_a_plain_write_leaves_dirty_pages_a_durable_one_none(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    fs.pipe_file(str(tmp_path / "plain.bin"), DATA)
    assert unwritten_pages(tmp_path / "plain.bin") > 0  # what the check would catch

    target = tmp_path / "new" / "folders" / "part.parquet"
    durable.put(fs, str(target), memoryview(DATA))

    assert target.read_bytes() == DATA
    assert unwritten_pages(target) == 0


def test_a_durable_replace_swaps_in_a_flushed_file_and_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    fs = LocalFileSystem()
    target = tmp_path / "alice" / "MEMORY.md"
    durable.replace(fs, str(target), b"old\n")
    durable.replace(fs, str(target), DATA)

    assert target.read_bytes() == DATA
    assert unwritten_pages(target) == 0
    assert [p.name for p in target.parent.iterdir()] == ["MEMORY.md"]


def direct_io_works(folder: Path) -> bool:
    try:
        os.close(os.open(folder / "probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600))
    except OSError:
        return False
    return True


def test_big_files_go_to_disk_and_back_past_the_page_cache(tmp_path: Path) -> None:
    blocks = mmap.mmap(-1, 2 * len(DATA))  # page-aligned, with room after the data
    blocks[: len(DATA) - 5] = DATA[:-5]
    target = tmp_path / "archive" / "part.parquet"

    durable.put_blocks(LocalFileSystem(), str(target), memoryview(blocks), len(DATA) - 5)

    direct = direct_io_works(tmp_path)
    if direct:  # straight to the disk: of 1,024 pages, only the last one is in memory
        assert cached_pages(target) <= 1  # (read back to cut the file to size)
    assert unwritten_pages(target) == 0
    assert target.read_bytes() == DATA[:-5]  # cut to size after whole blocks went out
    handle = os.open(target, os.O_RDONLY)
    os.posix_fadvise(handle, 0, 0, os.POSIX_FADV_DONTNEED)  # forget what that read cached
    os.close(handle)
    reading = mmap.mmap(-1, 1 << 20)
    pieces = [bytes(p) for p in durable.read_pieces(str(target), memoryview(reading))]
    assert b"".join(pieces) == DATA[:-5] and len(pieces) == 4
    if direct:  # read back from the disk itself
        assert cached_pages(target) == 0
    unaligned = memoryview(bytearray(b"x" + DATA))[1:]  # falls back to a plain durable write
    durable.put_blocks(LocalFileSystem(), str(target), unaligned, len(DATA))
    assert target.read_bytes() == DATA and unwritten_pages(target) == 0


def test_a_batch_written_unflushed_is_on_disk_after_one_flush(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    paths = [tmp_path / f"year={2020 + i % 2}" / f"session-{i}.parquet" for i in range(6)]
    for path in paths:
        durable.put(fs, str(path), DATA[:65536], flush=False)
    assert sum(unwritten_pages(p) for p in paths) > 0  # not yet

    durable.flush_all(fs, [str(p) for p in paths])

    assert [unwritten_pages(p) for p in paths] == [0] * len(paths)
    assert all(p.read_bytes() == DATA[:65536] for p in paths)
