"""Purge one session: its rows, its archived memories and transcript, and every view that
quoted it.

The views, each cleaned or rebuilt in the transaction that deletes the rows (so a crash
before the commit leaves rows a re-run finds, and the re-run's changes to the files are
the same):

- the daily log and task-card blocks, cut where the sync wrote them and from the copies
  the weekly tidy moved to ``memory/archive/YYYY/``;
- ``MEMORY.md``: the lines of the long-term entries built from the session
  (``storage.operations.purge``); their ``long_term`` memories go with them;
- each weekly summary that quotes the session (``weekly_summaries``), rebuilt from the
  store without it;
- ``timeline.jsonl``: the session's lines go, and one ``forget-session`` line records the
  purge by the session's pseudonym and the time.

The audit row names the session by its pseudonym, too.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive, audit, blocks
from storage.kernel.errors import InputError
from storage.operations import purge
from storage.operations.purge import PurgedRows
from storage.pseudonyms import session_pseudonym
from tasks.aging import ColdStore, take_out_all
from tasks.files import (
    TIMELINE,
    MemoryRoot,
    atomic_write,
    block_marker,
    drop_session_lines,
    flush_blocks,
    read_text,
    sweep_temporaries,
    timeline_block,
    timeline_path,
    utc_iso,
)
from tasks.privacy._scrub import scrub
from tasks.tidy import archived_path, memory_md_path, rebuild_weeklies, without_entries


def purge_session(
    engine: Engine,
    cold: ColdStore,
    root: MemoryRoot,
    session_id: str,
    *,
    actor: str,
    full_vacuum: bool = False,
    as_of: datetime | None = None,
) -> dict[str, int]:
    """Erase one session and all derived from it, in the store, the archive and the files."""
    with Session(engine) as session:
        owner = purge.session_namespace(session, session_id)
        grouped = archive.archived_of_sessions(session, [session_id])
        transcripts = archive.transcripts_of(session, [session_id])
        if owner is None and (grouped or transcripts):
            found = archive.manifests_by_id(session, [*grouped, *(e.id for e in transcripts)])
            owner = found[0].namespace
    if owner is None:
        # Perhaps a purge that was interrupted after its commit: its last step again.
        scrub(engine, {}, full=full_vacuum)
        raise InputError("unknown session id: nothing to purge")
    archived = take_out_all(engine, cold, grouped, None)
    for entry in transcripts:
        cold.remove(entry.uri)
    with Session(engine) as session, session.begin():
        files = set(purge.session_block_paths(session, session_id)) | {timeline_path(owner)}
        for path in sorted(files):  # no delivery writes them meanwhile; sorted, no deadlock
            blocks.lock_path(session, path)
        archived_ids = [i for ids in grouped.values() for i in ids]
        rows = purge.purge_session_rows(session, session_id, owner, archived_ids)
        archive.delete_manifests(session, [e.id for e in transcripts])
        counts = rows.counts | {"archived_memories": archived, "transcripts": len(transcripts)}
        counts |= _clean_files(session, root, owner, session_id, rows)
        label = session_pseudonym(session, owner, session_id)
        blocks.add_blocks(session, [_forget_line(owner, label, as_of)])
        audit.record(
            session, "purge_session", actor=actor, namespace=owner, target=label, details=counts
        )
    flush_blocks(engine, root, owner)
    scrub(engine, counts, full=full_vacuum)
    return counts


def _clean_files(
    session: Session, root: MemoryRoot, namespace: str, session_id: str, rows: PurgedRows
) -> dict[str, int]:
    """Every file that quoted the session, without it; counts of what changed."""
    logs = [(path, key) for path, key in rows.blocks if not path.endswith(f"/{TIMELINE}")]
    cut = sum(_cut_block(root, where, key) for path, key in logs for where in _copies(path))
    views = _clean_memory_md(root, namespace, rows.memory_md_lines)
    views += rebuild_weeklies(session, root, namespace, session_id)
    return {
        "file_blocks_removed": cut,
        "views_rebuilt": views,
        "timeline_lines_removed": drop_session_lines(root, namespace, session_id),
    }


def _copies(relative: str) -> list[str]:
    """A log where the sync wrote it and where the tidy moves it."""
    moved = archived_path(relative)
    return [relative] if moved is None else [relative, moved]


def _clean_memory_md(root: MemoryRoot, namespace: str, texts: list[str]) -> int:
    path = root.path(memory_md_path(namespace))
    body = read_text(root.fs, path) if texts else None
    if body is None or (cleaned := without_entries(body, texts)) == body:
        return 0
    atomic_write(root.fs, path, cleaned.encode("utf-8"))
    return 1


def _forget_line(namespace: str, label: str, as_of: datetime | None) -> dict[str, object]:
    """The timeline's record of a purge: the session's pseudonym and when, nothing else."""
    when = utc_iso(as_of or datetime.now(UTC))
    event = {"event": "forget-session", "namespace": namespace, "session": label}
    return timeline_block(namespace, f"forget-session:{label}@{when}", event | {"as_of": when})


def _cut_block(root: MemoryRoot, relative: str, key: str) -> int:
    """Remove one block, its heading included, from a memory file, and the temporary
    copies of files that killed writes left beside it."""
    sweep_temporaries(root, relative.rsplit("/", 1)[0])
    path = root.path(relative)
    body = read_text(root.fs, path)
    span = None if body is None else block_span(body, key)
    if body is None or span is None:
        return 0
    start, end = span
    atomic_write(root.fs, path, (body[:start].rstrip("\n") + "\n\n" + body[end:]).encode())
    return 1


def block_span(body: str, key: str) -> tuple[int, int] | None:
    """Where the block of ``key`` starts (its ``## `` heading) and ends (the next block's).

    A block is its heading line, its marker line and the text up to the next block's
    heading; the marker alone is not the start, or the heading would stay behind.
    """
    marker = body.find(block_marker(key))
    if marker < 0:
        return None
    following = body.find("<!-- archivist:block ", marker + 1)
    end = len(body) if following < 0 else _heading_start(body, following)
    return _heading_start(body, marker), end


def _heading_start(body: str, marker: int) -> int:
    """The start of the heading line just above a marker (the marker itself if none)."""
    line = body.rfind("\n", 0, max(marker - 1, 0)) + 1
    return line if body.startswith("## ", line) and line < marker else marker
