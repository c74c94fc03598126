"""``memory_access_pending``: accesses that searches counted and the flows have not folded yet;
and the access log's window (``memory_access_log``, counted by day beyond it).

A search upserts one narrow row per returned memory (``storage.retrieval``); the memory's
own ``access_count`` and ``last_accessed_at`` stay as the last fold left them. Whatever
scores by access adds the pending row to the memory's (a left join on both keys in each
such statement); the maintenance flows fold the pending rows into ``memories`` before they
read the counters (migration 0016 says why).

The access log keeps one row per search and priming (migration 0020) for
``AgingSettings.access_log_days``; ``prune_access_log`` moves older rows into
``memory_access_daily`` as counts per namespace and day (migration 0025), one batch of
rows in one statement, so a crash leaves each row either logged or counted, never both.

``record_searches`` writes many searches' accesses in one statement (migration 0030), each
checked against its key: the serving processes batch them (``serving._accesses``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text
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


# The oldest rows first; a day is the date in the configured time zone, a priming a row
# whose context says so (the rest are searches).
_OLD_ROWS = f"""
    SELECT id FROM memory_access_log
    WHERE accessed_at < :cutoff
      AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
      AND {in_shard("namespace")}
"""
PRUNE_LOG = text(
    f"""
    WITH old AS ({_OLD_ROWS} ORDER BY accessed_at, id LIMIT :batch
    ), gone AS (
        DELETE FROM memory_access_log l USING old WHERE l.id = old.id
        RETURNING l.namespace, l.context, l.accessed_at, l.memory_ids
    ), days AS (
        SELECT namespace, CAST(accessed_at AT TIME ZONE :tz AS date) AS day,
               count(*) FILTER (WHERE coalesce(context, '') NOT LIKE 'prime:%') AS searches,
               count(*) FILTER (WHERE context LIKE 'prime:%') AS primings,
               coalesce(sum(cardinality(memory_ids)), 0) AS hits
        FROM gone GROUP BY 1, 2
    ), counted AS (
        INSERT INTO memory_access_daily AS d (namespace, day, searches, primings, hits)
        SELECT namespace, day, searches, primings, hits FROM days
        ON CONFLICT (namespace, day) DO UPDATE
        SET searches = d.searches + excluded.searches,
            primings = d.primings + excluded.primings,
            hits = d.hits + excluded.hits
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone) AS rows, (SELECT count(*) FROM counted) AS days
    """
)
COUNT_OLD = text(f"SELECT count(*) FROM ({_OLD_ROWS}) old")


@dataclass(frozen=True)
class Pruned:
    """Access-log rows deleted, and the (namespace, day) counts they went into."""

    rows: int
    days: int


@dataclass(frozen=True)
class LogWindow:
    """Which access-log rows are past the window: before ``cutoff``, of one namespace or
    shard (or all); ``tz`` names the zone of the days they are counted under."""

    cutoff: datetime
    tz: str
    namespace: str | None = None
    shard: Shard | None = None

    def params(self) -> dict[str, object]:
        where = {"cutoff": self.cutoff, "tz": self.tz, "namespace": self.namespace}
        return where | shard_params(self.shard)


def prune_access_log(session: Session, window: LogWindow, batch: int) -> Pruned:
    """Count up to ``batch`` of the oldest rows past the window by namespace and day, and
    delete them."""
    row = session.execute(PRUNE_LOG, window.params() | {"batch": batch}).one()
    return Pruned(int(row.rows), int(row.days))


def old_access_rows(session: Session, window: LogWindow) -> int:
    """How many access-log rows are past the window (what a prune would delete)."""
    return int(session.execute(COUNT_OLD, window.params()).scalar_one())


# A batch's commit need not wait for the WAL flush, as a search's does not
# (``storage.retrieval.candidates._sql.SEARCH_SETTINGS``): only access statistics.
RECORD_SEARCHES = text(
    """
    SELECT set_config('synchronous_commit', 'off', true),
           archivist_record_searches(
               CAST(:hashes AS text[]), CAST(:namespaces AS text[]),
               CAST(:contexts AS text[]), CAST(:ats AS timestamptz[]),
               CAST(:hit_search AS integer[]), CAST(:hit_ids AS bigint[])) AS recorded
    """
)


@dataclass(frozen=True)
class SearchAccess:
    """One search's accesses, to record: the key's hash (``storage.keys.Grant.credential``)
    that scoped it, its namespace, the access log's context, when, and the memories it
    returned in rank order (document chunks are not memories)."""

    credential: str
    namespace: str
    context: str
    at: datetime
    memory_ids: tuple[int, ...]


def record_searches(conn: Connection, searches: Sequence[SearchAccess]) -> int:
    """Record ``searches`` in one statement (``archivist_record_searches``, migration 0030):
    one access-log row each, a pending access per memory and search; a search whose key no
    longer holds or is not its namespace's is left out. Returns the searches recorded."""
    if not searches:
        return 0
    params = {
        "hashes": [s.credential for s in searches],
        "namespaces": [s.namespace for s in searches],
        "contexts": [s.context for s in searches],
        "ats": [s.at for s in searches],
        "hit_search": [i for i, s in enumerate(searches, 1) for _ in s.memory_ids],
        "hit_ids": [m for s in searches for m in s.memory_ids],
    }
    return int(conn.execute(RECORD_SEARCHES, params).one().recorded)
