"""``<root>/<namespace>/timeline.jsonl``: one JSON object per line, per session state or event.

Lines reach the file through the same outbox as the daily logs (``storage.blocks``): each
is committed in the transaction of what it describes, then appended. Where a Markdown block
carries a marker comment, a line carries its block key as its ``block`` member; the
re-append check looks for that member as written, so the file stays valid JSON Lines.
On a local disk the file is only ever appended to: each flush writes its new lines at the
end in one write and flushes them, so its cost is the lines added, not a year of history.
Lines a killed flush wrote but could not mark written are at the end of the file, within
the size of what is pending, so only that tail is read to skip them; a torn last line
(the machine stopped mid-write) is cut off and written again. An object store has no end
to write at: there the file is replaced whole, in one PUT, as the other memory files are.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from fsspec.implementations.local import LocalFileSystem

from storage.kernel.errors import StorageError
from tasks.files import durable as durable
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
    wanted = [(key, f"{line.strip()}\n") for key, line in lines]
    if not isinstance(root.fs, LocalFileSystem):
        return _replace_with_lines(root, path, wanted)
    # What a killed flush left is at most the pending lines themselves; the slack covers a
    # line added by hand after them.
    pending = sum(len(line.encode("utf-8")) for _, line in wanted)
    length, tail = durable.read_tail(path, pending + TAIL_SLACK)
    drop_from, prefix = None, ""
    if tail and not tail.endswith(b"\n"):
        torn = tail.rsplit(b"\n", 1)[-1]
        if any(line.encode("utf-8").startswith(torn) for _, line in wanted):  # cut short
            drop_from, tail = length - len(torn), tail[: -len(torn)]
        else:  # edited by hand: a new line must start a line
            prefix = "\n"
    present = tail.decode("utf-8", errors="replace")
    new = [(key, line) for key, line in wanted if line_marker(key) not in present]
    if not new and drop_from is None:
        return 0
    data = prefix + "".join(line for _, line in new)
    durable.append(path, data.encode("utf-8"), drop_from=drop_from)
    return len(new)


TAIL_SLACK = 64 * 1024


def _replace_with_lines(root: MemoryRoot, path: str, wanted: Sequence[tuple[str, str]]) -> int:
    text = read_text(root.fs, path) or ""
    if text and not text.endswith("\n"):  # edited by hand: a new line must start a line
        text += "\n"
    added = 0
    for key, line in wanted:
        if line_marker(key) in text:
            continue  # written by an earlier, interrupted run
        text += line
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
