"""Privacy: forget a namespace, purge a session, pin and unpin, restore from the archive.

Each action writes one ``audit_log`` row (counts and ids, never content) in the
transaction of its database change. ``forget`` and ``purge_session`` then scrub the store
(``_scrub``): the deleted rows leave the table files and the planner's statistics. Files
go before the rows that point at them are deleted (forget, purge), so an interruption
leaves something a re-run can finish, never a file the database no longer knows about; a
repeated ``forget`` finds nothing and says so (and scrubs again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive, audit, blocks, privacy
from storage.ann import drop_namespace_index
from storage.archive import insert_rows
from storage.embedding import Embedder
from storage.errors import InputError, StorageError
from storage.records import NAMESPACE
from storage.reembed import refresh_vectors
from tasks.aging import ColdStore, namespace_folders, take_out_all
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
from tasks.privacy._export import export_namespace
from tasks.privacy._scrub import scrub


@dataclass
class ForgetOutcome:
    namespace: str
    rows: dict[str, int] = field(default_factory=dict)
    cold_files: int = 0
    memory_files: int = 0
    exported: dict[str, int] | None = None
    vacuumed: list[str] = field(default_factory=list)


def forget(
    engine: Engine,
    cold: ColdStore,
    root: MemoryRoot,
    namespace: str,
    *,
    actor: str,
    export_to: str | None = None,
    export_options: dict[str, Any] | None = None,
    full_vacuum: bool = False,
) -> ForgetOutcome:
    """Erase everything of a namespace (optionally exporting it first); one audit row."""
    if not NAMESPACE.fullmatch(namespace):
        raise InputError(f"bad namespace {namespace!r}: letters, digits, '.', '_', '-'")
    out = ForgetOutcome(namespace)
    if export_to is not None:
        options = export_options or {}
        out.exported = export_namespace(engine, cold, root, namespace, export_to, options)
    out.cold_files = sum(cold.remove_tree(folder) for folder in namespace_folders(namespace))
    out.memory_files = _remove_memory_folder(root, namespace)
    with Session(engine) as session, session.begin():
        out.rows = privacy.forget_rows(session, namespace)
        left = privacy.remaining(session, namespace)
        if left:
            raise StorageError(
                f"forget {namespace!r} left rows in {left}; add those tables to storage.privacy"
            )
        details = {**out.rows, "cold_files": out.cold_files, "memory_files": out.memory_files}
        details["exported"] = export_to is not None
        audit.record(session, "forget", actor=actor, namespace=namespace, details=details)
    with Session(engine) as session, session.begin():  # a short lock, once the rows are gone
        drop_namespace_index(session, namespace)
    out.vacuumed = scrub(engine, out.rows, full=full_vacuum)
    return out


def _remove_memory_folder(root: MemoryRoot, namespace: str) -> int:
    path = root.path(namespace)
    if not root.fs.exists(path):
        return 0
    count = len(root.fs.find(path))
    root.fs.rm(path, recursive=True)
    return count


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
    """Erase one session and all derived from it, in the store, the archive and the files;
    its timeline lines give way to one ``forget-session`` line (its id and ``as_of``)."""
    with Session(engine) as session:
        namespace = privacy.session_namespace(session, session_id)
        grouped = archive.archived_of_sessions(session, [session_id])
        transcripts = archive.transcripts_of(session, [session_id])
    if namespace is None and not grouped and not transcripts:
        raise InputError(f"unknown session {session_id!r}: nothing to purge")
    owner = namespace or (transcripts[0].namespace if transcripts else None)
    archived = take_out_all(engine, cold, grouped, None)
    for entry in transcripts:
        cold.remove(entry.uri)
    with Session(engine) as session, session.begin():
        files = set(privacy.session_block_paths(session, session_id))
        files |= {timeline_path(owner)} if owner is not None else set()
        for path in sorted(files):  # no delivery writes them meanwhile; sorted, no deadlock
            blocks.lock_path(session, path)
        archived_ids = [i for ids in grouped.values() for i in ids]
        counts, cut = privacy.purge_session_rows(session, session_id, owner, archived_ids)
        archive.delete_manifests(session, [e.id for e in transcripts])
        counts |= {"archived_memories": archived, "transcripts": len(transcripts)}
        logs = [(path, key) for path, key in cut if not path.endswith(f"/{TIMELINE}")]
        counts["file_blocks_removed"] = sum(_cut_block(root, path, key) for path, key in logs)
        if owner is not None:
            counts["timeline_lines_removed"] = drop_session_lines(root, owner, session_id)
            blocks.add_blocks(session, [_forget_line(owner, session_id, as_of)])
        audit.record(
            session,
            "purge_session",
            actor=actor,
            namespace=owner,
            target=f"session:{session_id}"[:300],
            details=counts,
        )
    if owner is not None:
        flush_blocks(engine, root, owner)
    scrub(engine, counts, full=full_vacuum)
    return counts


def _forget_line(namespace: str, session_id: str, as_of: datetime | None) -> dict[str, object]:
    """The timeline's record of a purge: the session's id and when, nothing of its text."""
    when = utc_iso(as_of or datetime.now(UTC))
    event = {"event": "forget-session", "namespace": namespace, "session": session_id}
    return timeline_block(namespace, f"forget-session:{session_id}@{when}", event | {"as_of": when})


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


def restore(
    engine: Engine, cold: ColdStore, memory_id: int, embedder: Embedder, *, actor: str
) -> int:
    """Bring an archived memory back to the hot table, with its id, vector and counters.

    A row archived under another embedding model comes back re-embedded by ``embedder``.
    """
    with Session(engine) as session:
        grouped = archive.locate(session, [memory_id])
    if not grouped:
        raise InputError(f"memory {memory_id} is not in the archive")

    def put_back(session: Session, rows: pa.Table) -> None:
        insert_rows(session, refresh_vectors(rows, embedder))
        archive.relink_episodes(session, rows.column("id").to_pylist())
        namespace = str(rows.column("namespace")[0]) if rows.num_rows else None
        audit.record(
            session,
            "restore",
            actor=actor,
            namespace=namespace,
            target=f"memory:{memory_id}",
            details={"rows": rows.num_rows},
        )

    return take_out_all(engine, cold, grouped, put_back)


def set_pin(
    engine: Engine,
    cold: ColdStore,
    memory_id: int,
    pinned: bool,
    embedder: Embedder,
    *,
    actor: str,
) -> str:
    """Pin (never ages) or unpin a memory; an archived one is restored first to be pinned."""
    with Session(engine) as session, session.begin():
        namespace = privacy.set_pinned(session, memory_id, pinned)
        if namespace is not None:
            action = "pin" if pinned else "unpin"
            audit.record(
                session, action, actor=actor, namespace=namespace, target=f"memory:{memory_id}"
            )
            return namespace
    if pinned:
        with Session(engine) as session:
            archived = bool(archive.locate(session, [memory_id]))
        if archived:
            restore(engine, cold, memory_id, embedder, actor=actor)
            return set_pin(engine, cold, memory_id, pinned, embedder, actor=actor)
    raise InputError(f"memory {memory_id} does not exist (or is archived: restore it first)")
