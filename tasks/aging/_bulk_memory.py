"""Process memory settings for bulk work (archival): fewer fresh pages, no GC walks.

Archival turns each batch of 50,000 memories into 100 MB or more of short-lived Python
objects and buffers. These defaults cost it dearly:

- Python's cycle collector walks every live container every few thousand allocations;
  the fetched rows hold no cycles.
- glibc hands freed memory back to the kernel as soon as 128 KB sit free at the top of a
  heap, and maps anything over 128 KB afresh; the next batch then faults in pages the
  kernel must zero again. That was about a tenth of archival's CPU time. Arrow's own
  allocator (mimalloc) does the same within milliseconds, so Arrow allocates from glibc
  (its system pool) meanwhile.

``bulk_memory()`` changes all three for a block and restores them after, releasing what
the allocator kept (``malloc_trim``); blocks that overlap in threads restore them once,
when the last ends. Without glibc it only pauses the collector.
"""

from __future__ import annotations

import ctypes
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

# mallopt(3) parameters and glibc's starting values.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
DEFAULT_TRIM_THRESHOLD = DEFAULT_MMAP_THRESHOLD = 128 * 1024
# Kept while bulk work runs: allocations up to 32 MB come from the heap (glibc's largest
# mmap threshold), and up to 1 GB of freed memory stays for the next batch.
BULK_MMAP_THRESHOLD = 32 * 1024 * 1024
BULK_TRIM_THRESHOLD = 1024 * 1024 * 1024


def glibc() -> Any | None:
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    has_all = all(
        hasattr(libc, name) for name in ("mallopt", "malloc_trim", "gnu_get_libc_version")
    )
    return libc if has_all else None


@dataclass
class _Blocks:
    """The blocks of this process inside ``bulk_memory`` now (two shards' runs in threads
    overlap), and what the first one found, which the last one restores."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    inside: int = 0
    collecting: bool = True
    arrow_pool: pa.MemoryPool | None = None


_BLOCKS = _Blocks()


def _enter(libc: Any | None) -> None:
    _BLOCKS.collecting, _BLOCKS.arrow_pool = gc.isenabled(), pa.default_memory_pool()
    gc.disable()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, BULK_MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, BULK_TRIM_THRESHOLD)
        pa.set_memory_pool(pa.system_memory_pool())


def _leave(libc: Any | None) -> None:
    if libc is not None and _BLOCKS.arrow_pool is not None:
        pa.set_memory_pool(_BLOCKS.arrow_pool)  # each buffer still frees into its own pool
        libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)
        libc.mallopt(M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD)
        libc.malloc_trim(0)
    if _BLOCKS.collecting:
        gc.enable()


@contextmanager
def bulk_memory() -> Iterator[None]:
    """Pause the cycle collector and keep freed memory in the process for a block. Blocks
    may overlap in threads: the first in changes the settings, the last out restores them."""
    libc = glibc()
    with _BLOCKS.lock:
        if _BLOCKS.inside == 0:
            _enter(libc)
        _BLOCKS.inside += 1
    try:
        yield
    finally:
        with _BLOCKS.lock:
            _BLOCKS.inside -= 1
            if _BLOCKS.inside == 0:
                _leave(libc)
