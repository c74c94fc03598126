"""bulk_memory keeps freed memory for the next batch, pauses the collector, restores both."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import threading

import pyarrow as pa
import pytest

from tasks.aging import bulk_memory, glibc
from tests.child import ROOT


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def held() -> tuple[int, int]:
    """(bytes in mmapped blocks, bytes of heap) that glibc holds for the main arena."""
    libc = glibc()
    assert libc is not None  # these machines run glibc
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return int(info.hblkhd), int(info.arena)


MB20 = 20 * 1024 * 1024


def freed_batches_stay_in_the_process_only_inside_the_block() -> None:
    with bulk_memory():
        mapped, heap = held()
        block = bytearray(MB20)
        assert held()[0] - mapped < MB20  # from the heap, not a fresh mapping
        del block
        assert held()[1] - heap > MB20 // 2  # and kept there for the next batch
    assert held()[1] - heap < MB20 // 2  # handed back at the end (malloc_trim)

    mapped, _ = held()
    block = bytearray(MB20)
    assert held()[0] - mapped >= MB20  # the default again: mapped afresh
    del block


def test_freed_batches_stay_in_the_process_only_inside_the_block() -> None:
    """In a fresh process: the heap must grow for the block to be seen kept. A process that
    ran other tests before (a pytest-xdist worker) may have a free hole of 20 MB in its
    heap already, and the block then fits in it without the heap growing."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {__name__} as t; t.{FRESH}()"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


FRESH = freed_batches_stay_in_the_process_only_inside_the_block.__name__


def test_arrow_allocates_from_glibc_inside_the_block_only() -> None:
    before = pa.default_memory_pool().backend_name
    with bulk_memory():
        assert pa.default_memory_pool().backend_name == "system"
        kept = pa.array(range(1000))
    assert pa.default_memory_pool().backend_name == before
    assert kept.sum().as_py() == 499500  # an array from the block outlives it


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_pauses_and_comes_back_as_it_was(*, enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(RuntimeError), bulk_memory():
            assert not gc.isenabled()
            raise RuntimeError("a failed batch")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_blocks_that_overlap_in_threads_restore_the_settings_when_the_last_ends() -> None:
    # Two shards' archival in one process: the first block ends while the second runs.
    before = pa.default_memory_pool().backend_name
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def first() -> None:
        with bulk_memory():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with bulk_memory():
            second_in.set()
            first_out.wait(10)
            seen.update(pool=pa.default_memory_pool().backend_name, collecting=gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)

    assert seen == {"pool": "system", "collecting": False}  # still inside the second block
    assert pa.default_memory_pool().backend_name == before and gc.isenabled()
