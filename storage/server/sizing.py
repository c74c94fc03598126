"""The server's cache sized for the machine: PostgreSQL's usual guidance puts
``shared_buffers`` at about a quarter of the memory (more rarely pays: the rest is the
operating system's cache, which PostgreSQL reads through as well).

What searches read most is the HNSW indexes of the large namespaces: 128 MB at 100,000
memories, 1.45 GB at a million (docs/how-to/benchmarks.md). Those not in
``shared_buffers`` are read from the OS cache page by page, which costs PostgreSQL's CPU on
every search (about a fifth of it at a million memories with 512 MB: docs/how-to/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

MB = 2**20
FLOOR_MB = 128  # PostgreSQL's own default
# A server that holds millions of memories, tuned by its operator (docs/how-to/external-postgres.md)
# or the scale benchmark's: more than 16 GB of cache is for a store far larger than measured.
SERVER_CEILING_MB = 16_384
CGROUP_LIMIT = Path("/sys/fs/cgroup/memory.max")  # a container's limit (cgroup v2)


def machine_memory() -> int | None:
    """The memory this machine (or its container, if limited) has, in bytes; None if
    unknown."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    with contextlib.suppress(OSError, ValueError):
        limit = CGROUP_LIMIT.read_text().strip()
        if limit != "max":
            return min(physical, int(limit))
    return physical


def shared_buffers(memory: int | None, ceiling_mb: int) -> str:
    """A quarter of ``memory`` (bytes) as a setting in MB, between PostgreSQL's default
    128 MB and ``ceiling_mb``; the ceiling when the memory is unknown."""
    if memory is None:
        return f"{ceiling_mb}MB"
    return f"{max(FLOOR_MB, min(ceiling_mb, memory // 4 // MB))}MB"
