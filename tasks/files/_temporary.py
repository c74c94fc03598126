"""The temporary files of atomic writes, and sweeping up those a killed writer left.

Locally, ``replace`` writes ``.<name>.<host>-<pid>.<uuid>.tmp`` beside its target,
flushes it and renames it over the target. A writer killed in between leaves that hidden
full copy behind, and nothing else ever removes it (the tidy archives the real log and
leaves the copy). ``sweep`` removes from one folder the files of exactly that pattern

- whose writer ran on this host and is gone (its pid no longer runs): at once;
- of another host, or named without their writer (before this naming), once older than
  ``STALE_AFTER_SECONDS``: no write of a memory file takes that long.

A temporary file of a live writer, in this process or another, is never touched. An
object store needs no sweep: a write there is one PUT, with no temporary object.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from contextlib import suppress

from storage.kernel.processes import host_tag, pid_running

STALE_AFTER_SECONDS = 3600.0
_TEMPORARY = re.compile(
    r"\.(?P<name>.+?)\.(?:(?P<host>[0-9a-f]{8})-(?P<pid>\d+)\.)?[0-9a-f]{32}\.tmp"
)


def temporary_path(path: str) -> str:
    """A new name beside ``path`` for its next version, naming this host and process."""
    parent, name = os.path.split(path)
    return os.path.join(parent, f".{name}.{host_tag()}-{os.getpid()}.{uuid.uuid4().hex}.tmp")


def sweep(folder: str) -> list[str]:
    """Remove the temporary files that killed writers left in a local folder; returns
    the names removed."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    removed = []
    for entry in entries:
        found = _TEMPORARY.fullmatch(entry.name)
        if found and entry.is_file(follow_symlinks=False) and _abandoned(entry, found):
            with suppress(FileNotFoundError):  # renamed by its writer, or swept meanwhile
                os.unlink(entry.path)
                removed.append(entry.name)
    return sorted(removed)


def _abandoned(entry: os.DirEntry[str], found: re.Match[str]) -> bool:
    pid = found["pid"]
    if found["host"] == host_tag() and pid is not None and not pid_running(int(pid)):
        return True
    try:
        modified = entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return False
    return time.time() - modified > STALE_AFTER_SECONDS
