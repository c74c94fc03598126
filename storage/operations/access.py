"""``memory_access_pending``: accesses that searches counted and the flows have not folded yet.

A search upserts one narrow row per returned memory (``storage.retrieval``); the memory's
own ``access_count`` and ``last_accessed_at`` stay as the last fold left them. Whatever
scores by access adds the pending row to the memory's (a left join on both keys in each
such statement); the maintenance flows fold the pending rows into ``memories`` before they
read the counters (migration 0016 says why).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.shards import Shard, in_shard, shard_params

# The pending rows are locked in key order, as searches lock them, and the memories in id
# order, so a fold and concurrent searches or another fold wait for each other, never
# deadlock. A row whose memory is gone, or names another namespace, is dropped unfolded.
FOLD = text(
    f"""
    WITH locked AS (
        SELECT memory_id, namespace FROM memory_access_pending
        WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
          AND {in_shard("namespace")}
        ORDER BY memory_id, namespace FOR UPDATE
    ), moved AS (
        DELETE FROM memory_access_pending p USING locked l
        WHERE p.memory_id = l.memory_id AND p.namespace = l.namespace
        RETURNING p.memory_id, p.namespace, p.hits, p.last_accessed_at
    ), target AS (
        SELECT m.id, mv.hits, mv.last_accessed_at
        FROM memories m JOIN moved mv ON mv.memory_id = m.id AND mv.namespace = m.namespace
        ORDER BY m.id FOR UPDATE OF m
    ), folded AS (
        UPDATE memories m SET access_count = m.access_count + t.hits,
                              last_accessed_at = t.last_accessed_at
        FROM target t WHERE m.id = t.id
        RETURNING t.hits
    )
    SELECT (SELECT count(*) FROM moved) AS rows,
           (SELECT count(*) FROM folded) AS memories,
           (SELECT coalesce(sum(hits), 0) FROM folded) AS accesses
    """
)


@dataclass(frozen=True)
class Folded:
    """What a fold moved: pending rows taken, memories updated, accesses added to them."""

    rows: int
    memories: int
    accesses: int


def fold_accesses(
    session: Session, namespace: str | None = None, shard: Shard | None = None
) -> Folded:
    """Add the pending accesses (of one namespace, one shard, or all) to their memories'
    counters."""
    row = session.execute(FOLD, {"namespace": namespace, **shard_params(shard)}).one()
    return Folded(int(row.rows), int(row.memories), int(row.accesses))
