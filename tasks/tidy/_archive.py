"""Move daily logs and task files into ``memory/archive/YYYY/``: copy, then delete.

Every log dated before the tidy's local date moves (the week's, and any older one a
missed tidy left behind); today's stays, since the sync still appends to it. A move
writes the archive copy first and deletes the live file only after that, so an
interruption leaves both and the next run finishes the move: blocks already in the
archive copy (by their ``archivist:block`` marker) are not added twice, and blocks a
later sync appended to a re-created live file are added to it. Before moving, the tidy
sweeps both folders of the temporary copies that killed writes left there, so no hidden
copy of a log stays behind the log it copied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from tasks.files import MemoryRoot, atomic_write, read_text, sweep_temporaries

_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
_BLOCK_START = re.compile(r"(?m)^(?=## )")
_MARKER = re.compile(r"<!-- archivist:block [^>]*-->")


@dataclass(frozen=True)
class LogMove:
    """One file to move, as paths relative to the memory root."""

    source: str
    target: str


_LOG_FOLDERS = (("memory", ""), ("memory/tasks", "tasks/"))


def planned_moves(root: MemoryRoot, namespace: str, today: date) -> list[LogMove]:
    """Daily logs and task files of ``namespace`` dated before ``today``, oldest first."""
    moves = []
    for folder, sub in _LOG_FOLDERS:
        for name, day in _dated_files(root, f"{namespace}/{folder}"):
            if day < today:
                target = f"{namespace}/memory/archive/{day:%Y}/{sub}{name}"
                moves.append(LogMove(f"{namespace}/{folder}/{name}", target))
    return sorted(moves, key=lambda m: (m.source.rsplit("/", 1)[1], m.source))


def archived_path(relative: str) -> str | None:
    """Where the tidy moves a daily log or task file (``<ns>/memory[/tasks]/<date>.md``);
    None for any other file."""
    namespace, _, rest = relative.partition("/")
    folder, _, name = rest.rpartition("/")
    subs = dict(_LOG_FOLDERS)
    if folder not in subs or not _DATED.match(name):
        return None
    return f"{namespace}/memory/archive/{name[:4]}/{subs[folder]}{name}"


def sweep_log_folders(root: MemoryRoot, namespace: str) -> list[str]:
    """Remove the temporary copies killed writes left beside the logs; returns their names."""
    return [n for f, _ in _LOG_FOLDERS for n in sweep_temporaries(root, f"{namespace}/{f}")]


def _dated_files(root: MemoryRoot, folder: str) -> list[tuple[str, date]]:
    try:
        paths = root.fs.ls(root.path(folder), detail=False)
    except FileNotFoundError:
        return []
    out = []
    for path in paths:
        name = str(path).rstrip("/").rsplit("/", 1)[-1]
        if _DATED.match(name):
            try:
                out.append((name, date.fromisoformat(name.removesuffix(".md"))))
            except ValueError:
                continue  # 2026-13-45.md: not one of ours
    return out


def move_log(root: MemoryRoot, move: LogMove) -> bool:
    """Finish one move (whatever an earlier run did of it); False if nothing was left."""
    live = read_text(root.fs, root.path(move.source))
    if live is None:
        return False
    archived = read_text(root.fs, root.path(move.target))
    merged = merge_logs(archived, live)
    if merged != archived:
        atomic_write(root.fs, root.path(move.target), merged.encode("utf-8"))
    root.fs.rm(root.path(move.source))
    return True


def merge_logs(archived: str | None, live: str) -> str:
    """The archive copy with every block of ``live`` it does not hold yet appended."""
    if archived is None or live == archived:
        return live if archived is None else archived
    chunks = [c for c in _BLOCK_START.split(live) if c.strip()]
    missing = [c.strip() for c in chunks if _identity(c) not in archived]
    if not missing:
        return archived
    return archived.rstrip("\n") + "\n\n" + "\n\n".join(missing) + "\n"


def _identity(chunk: str) -> str:
    """A block's marker line, or (for text without one) the text itself."""
    found = _MARKER.search(chunk)
    return found.group(0) if found else chunk.strip()
