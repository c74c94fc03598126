"""``<root>/<namespace>/timeline.jsonl``: one JSON object per line, per session state or event.

Lines reach the file through the same outbox as the daily logs (``storage.blocks``): each
is committed in the transaction of what it describes, then appended. Where a Markdown block
carries a marker comment, a line carries its block key as its ``block`` member; the
re-append check looks for that member as written, so the file stays valid JSON Lines.
Like the other memory files, the file is replaced whole on each write (atomically, flushed
to disk), so a crash never leaves half a line.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from storage.kernel.errors import StorageError
from tasks.files._memory_files import MemoryRoot, atomic_write, read_text, sweep_temporaries

TIMELINE = "timeline.jsonl"


def timeline_path(namespace: str) -> str:
    return f"{namespace}/{TIMELINE}"


def utc_iso(moment: datetime) -> str:
    """A moment as UTC ISO 8601, as every time in the timeline is written."""
    return moment.astimezone(UTC).isoformat()


def line_marker(block_key: str) -> str:
    """What identifies a line's block inside the file: its ``block`` member as written."""
    return f'"block": {json.dumps(block_key, ensure_ascii=False)}'


def timeline_line(block_key: str, event: Mapping[str, object]) -> str:
    """One event as one line: sorted keys, UTF-8, no indentation, its block key inside."""
    return json.dumps({**event, "block": block_key}, sort_keys=True, ensure_ascii=False)


def timeline_block(
    namespace: str,
    block_key: str,
    event: Mapping[str, object],
    memory_ids: Sequence[int] = (),
    run_id: uuid.UUID | None = None,
) -> dict[str, object]:
    """The outbox row (``storage.blocks``) of one timeline line."""
    return {
        "namespace": namespace,
        "path": timeline_path(namespace),
        "block_key": block_key,
        "content": timeline_line(block_key, event),
        "memory_ids": list(memory_ids),
        "run_id": run_id,
    }


def append_lines(root: MemoryRoot, relative: str, lines: Sequence[tuple[str, str]]) -> int:
    """Append each (block_key, line) whose block is not in the file yet; how many were added."""
    path = root.path(relative)
    text = read_text(root.fs, path) or ""
    if text and not text.endswith("\n"):  # edited by hand: a new line must start a line
        text += "\n"
    added = 0
    for key, line in lines:
        if line_marker(key) in text:
            continue  # written by an earlier, interrupted run
        text += f"{line.strip()}\n"
        added += 1
    if added:
        atomic_write(root.fs, path, text.encode("utf-8"))
    return added


def drop_session_lines(root: MemoryRoot, namespace: str, session_id: str) -> int:
    """Rewrite the namespace's timeline without the lines of one session's states (titles,
    topics, outcomes), and without the copies killed writes left beside it; how many went."""
    sweep_temporaries(root, namespace)
    path = root.path(timeline_path(namespace))
    text = read_text(root.fs, path)
    if text is None:
        return 0
    lines = text.splitlines(keepends=True)
    kept = [line for n, line in enumerate(lines, 1) if not _of_session(path, n, line, session_id)]
    if len(kept) < len(lines):
        atomic_write(root.fs, path, "".join(kept).encode("utf-8"))
    return len(lines) - len(kept)


def _of_session(path: str, number: int, line: str, session_id: str) -> bool:
    if not line.strip():
        return False
    try:
        event = json.loads(line)
    except json.JSONDecodeError as exc:  # edited by hand: it may hold the session's text
        raise StorageError(
            f"{path} line {number} is not JSON: fix or remove it, then purge again"
        ) from exc
    return (
        isinstance(event, dict)
        and event.get("event") == "session"
        and event.get("session") == session_id
    )
