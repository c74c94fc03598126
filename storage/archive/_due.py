"""What ageing takes from the hot table and the cold tier: old rows, old files, and the
namespaces that hold old rows, each of one namespace and one shard (``storage.kernel.shards``),
or of every one when they are None."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.archive._manifest import _COLUMNS, ManifestEntry, _entries, _grouped
from storage.kernel.shards import Shard, in_shard, shard_params

# How many memories a run would archive (a dry run's answer; it reads every old row).
COUNT_ARCHIVABLE = text(
    f"""
    SELECT count(*) FROM memories
    WHERE occurred_at < :cutoff AND NOT pinned
      AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
      AND {in_shard("namespace")}
    """
)
# Each namespace and its oldest memory, from the (namespace, occurred_at) index: a skip
# over distinct namespaces, one index probe each, never a read of the whole table. The
# oldest memory is looked up only for the namespaces of the shard.
NAMESPACE_FIRSTS = text(
    f"""
    WITH RECURSIVE spaces AS (
        SELECT min(namespace) AS namespace FROM memories
        WHERE CAST(:namespace AS text) IS NULL OR namespace = :namespace
        UNION ALL
        SELECT (SELECT min(m.namespace) FROM memories m
                WHERE m.namespace > s.namespace
                  AND (CAST(:namespace AS text) IS NULL OR m.namespace = :namespace))
        FROM spaces s WHERE s.namespace IS NOT NULL
    )
    SELECT s.namespace,
           (SELECT min(m.occurred_at) FROM memories m WHERE m.namespace = s.namespace) AS first
    FROM spaces s WHERE s.namespace IS NOT NULL AND {in_shard("s.namespace")}
    ORDER BY s.namespace
    """
)
OLD_ARCHIVED = text(
    f"""
    SELECT memory_id, manifest_id FROM archived_memories
    WHERE occurred_at < :cutoff AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
      AND {in_shard("namespace")}
    ORDER BY manifest_id, memory_id
    """
)
OLD_TRANSCRIPTS = text(
    f"""
    SELECT {_COLUMNS} FROM archive_manifest
    WHERE kind = 'transcript' AND last_at < :cutoff
      AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
      AND {in_shard("namespace")}
    ORDER BY id
    """
)


def count_archivable(
    session: Session, cutoff: datetime, namespace: str | None, shard: Shard | None = None
) -> int:
    params = {"cutoff": cutoff, "namespace": namespace, **shard_params(shard)}
    return int(session.execute(COUNT_ARCHIVABLE, params).scalar_one())


def namespaces_older_than(
    session: Session, cutoff: datetime, namespace: str | None, shard: Shard | None = None
) -> list[str]:
    """Every namespace (or just ``namespace``) of the shard whose oldest memory is older
    than ``cutoff``."""
    params = {"namespace": namespace, **shard_params(shard)}
    rows = session.execute(NAMESPACE_FIRSTS, params)
    return [str(ns) for ns, first in rows if first < cutoff]


def old_archived(
    session: Session, cutoff: datetime, namespace: str | None, shard: Shard | None = None
) -> dict[int, list[int]]:
    """Archived ids that happened before ``cutoff``, grouped by the file that holds them."""
    params = {"cutoff": cutoff, "namespace": namespace, **shard_params(shard)}
    return _grouped(session.execute(OLD_ARCHIVED, params).all())


def old_transcripts(
    session: Session, cutoff: datetime, namespace: str | None, shard: Shard | None = None
) -> list[ManifestEntry]:
    """Transcript files whose conversation ended before ``cutoff``."""
    params = {"cutoff": cutoff, "namespace": namespace, **shard_params(shard)}
    return _entries(session.execute(OLD_TRANSCRIPTS, params).all())
