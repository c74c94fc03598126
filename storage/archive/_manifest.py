"""The cold tier's index: ``archive_manifest`` (one row per Parquet file) and
``archived_memories`` (which file holds which memory id).

A manifest row walks ``written`` -> ``verified`` -> ``committed``. Only committed files
are searched; a file is committed in the same transaction that deletes its rows from
``memories`` and indexes them here, so a memory is always in exactly one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.shards import Shard, in_shard, shard_params

MEMORIES, TRANSCRIPT = "memories", "transcript"


@dataclass(frozen=True)
class ManifestEntry:
    id: int
    kind: str
    namespace: str
    year: int
    uri: str
    row_count: int
    checksum: str
    min_id: int | None
    max_id: int | None
    session_id: str | None
    last_at: datetime
    status: str


_COLUMNS = (
    "id, kind, namespace, year, uri, row_count, checksum, min_id, max_id, session_id, "
    "last_at, status"
)

UPSERT_MANIFEST = text(
    f"""
    INSERT INTO archive_manifest
        (kind, namespace, year, uri, row_count, checksum, min_id, max_id, session_id,
         last_at, status)
    VALUES (:kind, :namespace, :year, :uri, :row_count, :checksum, :min_id, :max_id,
            :session_id, :last_at, :status)
    ON CONFLICT (uri) DO UPDATE SET
        row_count = excluded.row_count, checksum = excluded.checksum,
        min_id = excluded.min_id, max_id = excluded.max_id, last_at = excluded.last_at,
        status = excluded.status, created_at = now()
    WHERE archive_manifest.status <> 'committed'
    RETURNING {_COLUMNS}
    """
)
# A server crash may lose these commits (never half of one): every step of the archive
# protocol is re-checked by the next run, so waiting for the WAL flush buys nothing. The
# delete's trigger holds every deleted row (about 60 MB for 33,000 memories); in the
# default 4 MB of work_mem it went through a temporary file.
RELAXED_COMMIT = text(
    "SELECT set_config('synchronous_commit', 'off', true), set_config('work_mem', '256MB', true)"
)
SET_STATUS = text("UPDATE archive_manifest SET status = :status WHERE id = ANY(:ids)")
REPLACE_FILE = text(
    """
    UPDATE archive_manifest SET uri = :uri, row_count = :row_count, checksum = :checksum,
        min_id = :min_id, max_id = :max_id
    WHERE id = :id
    """
)
DELETE_MANIFESTS = text(
    """
    WITH unindexed AS (
        DELETE FROM archived_memories WHERE manifest_id = ANY(CAST(:ids AS bigint[]))
    )
    DELETE FROM archive_manifest WHERE id = ANY(CAST(:ids AS bigint[]))
    """
)
MANIFESTS = text(
    f"""
    SELECT {_COLUMNS} FROM archive_manifest
    WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
      AND {in_shard("namespace")}
      AND (CAST(:kind AS text) IS NULL OR kind = :kind)
      AND (CAST(:statuses AS text[]) IS NULL OR status = ANY(CAST(:statuses AS text[])))
    ORDER BY id
    """
)
MANIFESTS_BY_ID = text(f"SELECT {_COLUMNS} FROM archive_manifest WHERE id = ANY(:ids) ORDER BY id")
TRANSCRIPTS_OF = text(
    f"SELECT {_COLUMNS} FROM archive_manifest "
    "WHERE kind = 'transcript' AND session_id = ANY(CAST(:sessions AS text[])) ORDER BY id"
)

# Commit a verified file: its rows leave the hot table and are indexed here, in one step.
# Ids that vanished meanwhile (a purge) are simply not indexed; the caller compares counts.
# A row leaves only as the file holds it: a search that counted an access (pending, not yet
# folded: ``storage.operations.access``), or a pin, since the fetch makes its file stale (the caller
# then discards it and archives the row anew, once the access is folded).
COMMIT_MEMORIES = text(
    """
    WITH moved AS (
        DELETE FROM memories m
        USING unnest(CAST(:ids AS bigint[]), CAST(:counts AS integer[]),
                     CAST(:touched AS timestamptz[])) AS f(id, access_count, touched)
        WHERE m.id = ANY(CAST(:ids AS bigint[])) AND m.id = f.id AND NOT m.pinned
          AND m.access_count = f.access_count
          AND m.last_accessed_at IS NOT DISTINCT FROM f.touched
          AND NOT EXISTS (SELECT 1 FROM memory_access_pending p WHERE p.memory_id = m.id)
        RETURNING m.id, m.namespace, m.session_id, m.occurred_at
    ), indexed AS (
        INSERT INTO archived_memories (memory_id, manifest_id, namespace, session_id, occurred_at)
        SELECT id, :manifest_id, namespace, session_id, occurred_at FROM moved
        RETURNING 1
    )
    SELECT count(*) FROM indexed
    """
)
# Defence in depth: a hot row whose id a committed file already holds is a leftover copy.
DROP_ARCHIVED_LEFTOVERS = text(
    "DELETE FROM memories m USING archived_memories a WHERE a.memory_id = m.id "
    "AND (CAST(:namespace AS text) IS NULL OR m.namespace = :namespace) "
    f"AND {in_shard('m.namespace')}"
)
LOCATE = text(
    """
    SELECT a.memory_id, a.manifest_id FROM archived_memories a
    WHERE a.memory_id = ANY(CAST(:ids AS bigint[]))
    ORDER BY a.manifest_id, a.memory_id
    """
)
ARCHIVED_OF_SESSION = text(
    "SELECT memory_id, manifest_id FROM archived_memories "
    "WHERE session_id = ANY(CAST(:sessions AS text[])) ORDER BY manifest_id, memory_id"
)
UNINDEX = text("DELETE FROM archived_memories WHERE memory_id = ANY(CAST(:ids AS bigint[]))")
COUNT_ARCHIVED = text(
    "SELECT count(*) FROM archived_memories "
    "WHERE CAST(:namespace AS text) IS NULL OR namespace = :namespace"
)


def _entries(rows: Sequence[Any]) -> list[ManifestEntry]:
    return [ManifestEntry(*row) for row in rows]


def upsert_manifest(session: Session, entry: dict[str, object]) -> ManifestEntry | None:
    """Record a written file (None if that uri is already committed)."""
    row = session.execute(UPSERT_MANIFEST, entry).first()
    return None if row is None else ManifestEntry(*row)


def relax_commit(session: Session) -> None:
    session.execute(RELAXED_COMMIT)


def set_status(session: Session, ids: Sequence[int], status: str) -> None:
    session.execute(SET_STATUS, {"ids": list(ids), "status": status})


def replace_file(session: Session, manifest_id: int, values: dict[str, object]) -> None:
    """Point a manifest row at the rewritten file that replaces its old one."""
    session.execute(REPLACE_FILE, {"id": manifest_id, **values})


def delete_manifests(session: Session, ids: Sequence[int]) -> None:
    """Forget files (and the ids they held) in the index."""
    if ids:
        session.execute(DELETE_MANIFESTS, {"ids": list(ids)})


def manifests(
    session: Session,
    *,
    namespace: str | None = None,
    shard: Shard | None = None,
    kind: str | None = None,
    statuses: Sequence[str] | None = None,
) -> list[ManifestEntry]:
    """The files (of a namespace, a shard, a kind, in these statuses), by id."""
    params = {
        "namespace": namespace,
        "kind": kind,
        "statuses": list(statuses) if statuses else None,
        **shard_params(shard),
    }
    return _entries(session.execute(MANIFESTS, params).all())


def manifests_by_id(session: Session, ids: Sequence[int]) -> list[ManifestEntry]:
    return _entries(session.execute(MANIFESTS_BY_ID, {"ids": list(ids)}).all())


def transcripts_of(session: Session, session_ids: Sequence[str]) -> list[ManifestEntry]:
    return _entries(session.execute(TRANSCRIPTS_OF, {"sessions": list(session_ids)}).all())


def commit_memories(session: Session, manifest_id: int, rows: pa.Table) -> int:
    """Move the file's rows (``rows``: their id, access count and last access) out of the
    hot table into the index; returns how many moved, unchanged since the file was made."""
    params = {
        "manifest_id": manifest_id,
        "ids": rows.column("id").to_pylist(),
        "counts": rows.column("access_count").to_pylist(),
        "touched": rows.column("last_accessed_at").to_pylist(),
    }
    moved = int(session.execute(COMMIT_MEMORIES, params).scalar_one())
    set_status(session, [manifest_id], "committed")
    return moved


def drop_archived_leftovers(
    session: Session, namespace: str | None = None, shard: Shard | None = None
) -> int:
    """Delete hot rows (of a namespace, a shard) whose id a committed file holds."""
    params = {"namespace": namespace, **shard_params(shard)}
    result = session.execute(DROP_ARCHIVED_LEFTOVERS, params)
    return int(getattr(result, "rowcount", 0))


def locate(session: Session, ids: Sequence[int]) -> dict[int, list[int]]:
    """Archived ids grouped by the manifest (file) that holds them."""
    return _grouped(session.execute(LOCATE, {"ids": list(ids)}).all())


def archived_of_sessions(session: Session, session_ids: Sequence[str]) -> dict[int, list[int]]:
    return _grouped(session.execute(ARCHIVED_OF_SESSION, {"sessions": list(session_ids)}).all())


def unindex(session: Session, ids: Sequence[int]) -> None:
    session.execute(UNINDEX, {"ids": list(ids)})


def count_archived(session: Session, namespace: str | None = None) -> int:
    return int(session.execute(COUNT_ARCHIVED, {"namespace": namespace}).scalar_one())


def _grouped(rows: Sequence[Any]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for memory_id, manifest_id in rows:
        out.setdefault(int(manifest_id), []).append(int(memory_id))
    return out


# A restored episode memory becomes its episode's memory again.
RELINK_EPISODES = text(
    """
    UPDATE episodes e SET memory_id = m.id
    FROM memories m
    WHERE m.id = ANY(CAST(:ids AS bigint[])) AND m.kind = 'episode'
      AND e.session_id = m.session_id AND e.memory_id IS NULL
    """
)


def relink_episodes(session: Session, ids: Sequence[int]) -> None:
    session.execute(RELINK_EPISODES, {"ids": list(ids)})
