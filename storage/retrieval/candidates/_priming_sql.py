"""The statements behind priming (``storage.retrieval._priming``), each kept whole and named."""

from __future__ import annotations

from sqlalchemy import text

# Priming: the namespace's latest episodes with the access history of their memory row.
RECENT_EPISODES = text(
    """
    SELECT e.session_id, e.summary, e.topics, e.entities, e.open_threads, e.ended_at,
           e.memory_id, coalesce(m.access_count + coalesce(p.hits, 0), 0) AS access_count,
           coalesce(p.last_accessed_at, m.last_accessed_at) AS last_accessed_at
    FROM episodes e LEFT JOIN memories m ON m.id = e.memory_id
    LEFT JOIN memory_access_pending p ON p.memory_id = m.id AND p.namespace = m.namespace
    WHERE e.namespace = :namespace AND e.ended_at <= :now
    ORDER BY e.ended_at DESC, e.session_id
    LIMIT :scan
    """
)

# Priming without a first message: the most important facts, with what scoring needs.
TOP_FACTS = text(
    """
    SELECT m.id, m.namespace, m.kind, m.content, m.importance, m.vehemence,
           m.access_count + coalesce(p.hits, 0) AS access_count,
           coalesce(p.last_accessed_at, m.last_accessed_at) AS last_accessed_at,
           m.occurred_at, m.created_at, m.session_id, m.message_ids, m.tier,
           0.0 AS cosine, 0.0 AS bm25
    FROM memories m
    LEFT JOIN memory_access_pending p ON p.memory_id = m.id AND p.namespace = m.namespace
    WHERE m.namespace = :namespace AND m.kind = ANY(CAST(:kinds AS text[]))
      AND m.tier <> 'archived' AND m.occurred_at <= :now
    ORDER BY m.importance DESC, m.occurred_at DESC, m.id
    LIMIT :scan
    """
)

# By session (unique), the namespace a filter: as an index condition, the planner could
# take the namespace's (namespace, ended_at, session_id) index and read all its entries.
EPISODE_ENTITIES = text(
    "SELECT session_id, entities FROM episodes "
    "WHERE session_id = ANY(CAST(:sessions AS text[])) AND (namespace = :namespace) IS TRUE"
)
