"""Shards: a night's work split by namespace, so several workers can share it.

Shard ``i/n`` (1 <= i <= n) holds the namespaces whose stable hash modulo ``n`` is
``i - 1``. The hash is the first 32 bits of the namespace's MD5, which PostgreSQL and
Python compute alike, on any machine and release: a namespace always lands in the same
shard, two shards of one split never share a namespace, and the ``n`` shards of a split
hold every namespace. A query filters by shard with ``in_shard(column)`` and the
parameters of ``shard_params``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

MAX_SHARDS = 256
SHARD_PATTERN = r"^[1-9][0-9]*/[1-9][0-9]*$"


@dataclass(frozen=True)
class Shard:
    """One part ``index``/``count`` of a split by namespace."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS or not 1 <= self.index <= self.count:
            raise ValueError(
                f"shard {self.index}/{self.count}: expected i/n with 1 <= i <= n <= {MAX_SHARDS}"
            )

    @classmethod
    def parse(cls, value: str) -> Shard:
        """``"2/4"`` as a shard; a clear error for anything else."""
        if not re.fullmatch(SHARD_PATTERN, value.strip()):
            raise ValueError(f"shard {value!r}: expected i/n, for example 2/4")
        index, count = value.strip().split("/")
        return cls(int(index), int(count))

    @classmethod
    def all(cls, count: int) -> list[Shard]:
        """The ``count`` shards of a split, which together hold every namespace."""
        return [cls(i, count) for i in range(1, count + 1)]

    def holds(self, namespace: str) -> bool:
        return shard_number(namespace, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_number(namespace: str, count: int) -> int:
    """The shard (1..count) of ``namespace``: as ``in_shard`` computes it in SQL."""
    digest = hashlib.md5(namespace.encode(), usedforsecurity=False).hexdigest()
    return int(digest[:8], 16) % count + 1


def in_shard(column: str) -> str:
    """SQL true when ``column`` (a namespace) is in the shard of ``shard_params``, or when
    there is no shard."""
    return (
        "(CAST(:shard_count AS integer) IS NULL OR "
        f"('x' || left(md5({column}), 8))::bit(32)::bigint % :shard_count + 1 = :shard_index)"
    )


def shard_params(shard: Shard | None) -> dict[str, Any]:
    """The bind parameters of ``in_shard``."""
    if shard is None:
        return {"shard_count": None, "shard_index": None}
    return {"shard_count": shard.count, "shard_index": shard.index}


@dataclass(frozen=True)
class Scope:
    """What one run covers, and whether it writes: one namespace or every one (None), one
    shard of them or all (None), and ``dry_run``: count what would change, change nothing."""

    namespace: str | None = None
    shard: Shard | None = None
    dry_run: bool = False

    @property
    def shard_label(self) -> str | None:
        """``"2/4"``, or None for every namespace."""
        return None if self.shard is None else str(self.shard)
