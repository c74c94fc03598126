"""The memory files an assistant may read: ``MEMORY.md`` and the recent daily logs.

The namespace comes from a grant (checked against ``storage.kernel.records.NAMESPACE``), so a
path never leaves ``<memory root>/<namespace>/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import fsspec

from storage.kernel.records import NAMESPACE
from storage.kernel.settings import Settings

DAILY = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
MAX_DAYS = 31


@dataclass(frozen=True)
class MemoryFiles:
    fs: Any
    root: str

    @classmethod
    def of(cls, settings: Settings) -> MemoryFiles:
        fs, root = fsspec.core.url_to_fs(settings.memory_root_url, **settings.storage_options)
        return cls(fs=fs, root=root.rstrip("/"))

    def memory_md(self, namespace: str) -> str:
        """The namespace's ``MEMORY.md``; empty before the first weekly tidy."""
        return self._read(f"{self._folder(namespace)}/MEMORY.md")

    def daily_logs(self, namespace: str, days: int = 7) -> dict[str, str]:
        """The latest ``days`` daily logs, newest first, by file name (``2026-11-20.md``)."""
        if not 1 <= days <= MAX_DAYS:
            raise ValueError(f"days {days} out of range 1..{MAX_DAYS}")
        folder = f"{self._folder(namespace)}/memory"
        try:
            names = [p.rsplit("/", 1)[-1] for p in self.fs.ls(folder, detail=False)]
        except FileNotFoundError:
            return {}
        latest = sorted((n for n in names if DAILY.match(n)), reverse=True)[:days]
        return {name: self._read(f"{folder}/{name}") for name in latest}

    def _folder(self, namespace: str) -> str:
        if not NAMESPACE.fullmatch(namespace):
            raise ValueError(f"bad namespace {namespace!r}")
        return f"{self.root}/{namespace}"

    def _read(self, path: str) -> str:
        try:
            with self.fs.open(path, "rb") as handle:
                data: bytes = handle.read()
        except FileNotFoundError:
            return ""
        return data.decode("utf-8", errors="replace")
