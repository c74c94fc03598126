"""What the API and the MCP server read and change of one namespace, beside search.

Each function takes a session already scoped to ``namespace`` (``storage.server.scoped.scope``)
and filters by it as well: two walls, never one. None of them commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

# Access counters with the accesses not yet folded into the row (``storage.operations.access``).
MEMORY = text(
    """
    SELECT m.id AS memory_id, m.namespace, m.kind, m.content, m.importance, m.salience,
           m.tier, m.pinned, m.access_count + coalesce(p.hits, 0) AS access_count,
           coalesce(p.last_accessed_at, m.last_accessed_at) AS last_accessed_at,
           m.session_id, m.message_ids, m.occurred_at, m.created_at
    FROM memories m
    LEFT JOIN memory_access_pending p ON p.memory_id = m.id AND p.namespace = m.namespace
    WHERE m.id = :id AND m.namespace = :namespace
    """
)
ARCHIVED = text("SELECT 1 FROM archived_memories WHERE memory_id = :id AND namespace = :namespace")
PIN = text(
    """
    UPDATE memories SET pinned = :pinned, salience = CASE WHEN :pinned THEN 1 ELSE salience END
    WHERE id = :id AND namespace = :namespace RETURNING id
    """
)
RECENT_EPISODES = text(
    """
    SELECT e.session_id, s.title, e.summary, e.topics, e.outcomes, e.open_threads,
           e.message_count, e.started_at, e.ended_at, e.memory_id
    FROM episodes e JOIN chat_sessions s ON s.id = e.session_id
    WHERE e.namespace = :namespace ORDER BY e.ended_at DESC, e.session_id LIMIT :limit
    """
)


def memory(session: Session, namespace: str, memory_id: int) -> dict[str, Any] | None:
    """A hot memory of the namespace with its provenance, or None."""
    row = session.execute(MEMORY, {"id": memory_id, "namespace": namespace}).mappings().first()
    return None if row is None else dict(row)


def archived(session: Session, namespace: str, memory_id: int) -> bool:
    """Whether the namespace's memory sits in the cold tier."""
    found = session.execute(ARCHIVED, {"id": memory_id, "namespace": namespace}).first()
    return found is not None


def set_pinned(session: Session, namespace: str, memory_id: int, *, pinned: bool) -> bool:
    """Pin or unpin a hot memory of the namespace; False if it has none of that id."""
    params = {"id": memory_id, "namespace": namespace, "pinned": pinned}
    return session.execute(PIN, params).first() is not None


def recent_episodes(session: Session, namespace: str, limit: int) -> list[dict[str, Any]]:
    """The namespace's latest session summaries, newest first."""
    rows = session.execute(RECENT_EPISODES, {"namespace": namespace, "limit": limit})
    return [dict(row) for row in rows.mappings()]
