"""The ageing statements: salience decay and session compression (set-based, batched).

Decay walks the table by id range, one statement per ``decay_batch`` ids, and writes a row
only when its salience moved by more than epsilon (``archivist_salience`` in migration
0005 is the formula of ``storage.kernel.scoring.salience``). Pinned memories hold 1.0.

Compression works on a batch of sessions at once: the transcripts are already in the
cold tier (written and verified by the caller), so one transaction deletes the session's
``turn`` memories (adding their access counts, pending ones included, to its episode
memory), flags the episode ``compressed`` and deletes the raw messages the transcript
holds. The access log keeps the turns' ids: it is a history of what searches returned.

Each selection takes a namespace and a shard (``storage.kernel.shards``); None is every one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.shards import Scope, Shard, in_shard, shard_params

ID_RANGE = text(
    "SELECT coalesce(min(id), 0) AS lo, coalesce(max(id), -1) AS hi FROM memories "
    "WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace) "
    f"AND {in_shard('namespace')}"
)
EPISODE_ID_RANGE = text(
    "SELECT coalesce(min(id), 0) AS lo, coalesce(max(id), -1) AS hi FROM episodes "
    "WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace) "
    f"AND {in_shard('namespace')}"
)

DECAY = text(
    f"""
    WITH target AS (
        SELECT id, salience AS old,
               CASE WHEN pinned THEN 1.0 ELSE archivist_salience(
                   access_count, coalesce(last_accessed_at, occurred_at), :as_of, :half_life)
               END AS new
        FROM memories
        WHERE id >= :lo AND id < :hi
          AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
          AND {in_shard("namespace")}
    ), moved AS (
        UPDATE memories m SET salience = t.new
        FROM target t
        WHERE m.id = t.id AND abs(t.new - t.old) > :epsilon AND NOT :dry_run
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM target) AS seen,
           (SELECT count(*) FROM target WHERE abs(new - old) > :epsilon) AS changed
    """
)

DECAY_EPISODES = text(
    f"""
    WITH target AS (
        SELECT e.id, e.salience AS old,
               CASE WHEN coalesce(m.pinned, false) THEN 1.0 ELSE archivist_salience(
                   coalesce(m.access_count, 0),
                   coalesce(m.last_accessed_at, e.last_accessed_at, e.ended_at),
                   :as_of, :half_life)
               END AS new,
               coalesce(m.last_accessed_at, e.last_accessed_at) AS touched
        FROM episodes e LEFT JOIN memories m ON m.id = e.memory_id
        WHERE e.id >= :lo AND e.id < :hi
          AND (CAST(:namespace AS text) IS NULL OR e.namespace = :namespace)
          AND {in_shard("e.namespace")}
    ), moved AS (
        UPDATE episodes e SET salience = t.new, last_accessed_at = t.touched
        FROM target t
        WHERE e.id = t.id AND abs(t.new - t.old) > :epsilon AND NOT :dry_run
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM target) AS seen,
           (SELECT count(*) FROM target WHERE abs(new - old) > :epsilon) AS changed
    """
)


@dataclass(frozen=True)
class DecayParams:
    """One decay pass: as of when, the half-life, the change worth a write, and its scope."""

    as_of: datetime
    half_life: float
    epsilon: float
    scope: Scope = Scope()


def id_range(
    session: Session, namespace: str | None, *, shard: Shard | None = None, episodes: bool = False
) -> range:
    """Every id of the table (of one namespace, one shard), as a range to walk in batches."""
    params = {"namespace": namespace, **shard_params(shard)}
    row = session.execute(EPISODE_ID_RANGE if episodes else ID_RANGE, params)
    lo, hi = row.one()
    return range(int(lo), int(hi) + 1)


def decay_batch(
    session: Session, params: DecayParams, lo: int, hi: int, *, episodes: bool = False
) -> tuple[int, int]:
    """Decay ids in [lo, hi); returns (rows seen, rows written or, dry run, to write)."""
    scope = params.scope
    values = {"as_of": params.as_of, "half_life": params.half_life, "epsilon": params.epsilon}
    values |= {"namespace": scope.namespace, "dry_run": scope.dry_run, "lo": lo, "hi": hi}
    values |= shard_params(scope.shard)
    row = session.execute(DECAY_EPISODES if episodes else DECAY, values).one()
    return int(row.seen), int(row.changed)


# Sessions whose whole conversation is older than the cutoff and already summarised (the
# processed state covers the last message), with an episode memory and nothing pinned.
COMPRESSIBLE = text(
    f"""
    SELECT s.id AS session_id, s.namespace, e.memory_id, e.summary,
           max(c.ts) AS last_at, count(*) AS messages, s.title
    FROM chat_sessions s
    JOIN chat_messages c ON c.session_id = s.id
    JOIN episodes e ON e.session_id = s.id AND e.memory_id IS NOT NULL
    JOIN processed_sessions p ON p.session_id = s.id
    WHERE (CAST(:namespace AS text) IS NULL OR s.namespace = :namespace)
      AND {in_shard("s.namespace")}
      AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.session_id = s.id AND m.pinned)
    GROUP BY s.id, s.namespace, e.memory_id, e.summary, p.last_message_at, s.title
    HAVING max(c.ts) < :cutoff AND p.last_message_at >= max(c.ts)
    ORDER BY s.id
    """
)

SESSION_MESSAGES = text(
    """
    SELECT session_id, id, role, speaker, content, ts FROM chat_messages
    WHERE session_id = ANY(CAST(:sessions AS text[]))
    ORDER BY session_id, ts, id
    """
)

TURN_COUNTS = text(
    """
    SELECT count(*) FROM memories
    WHERE session_id = ANY(CAST(:sessions AS text[])) AND kind = 'turn' AND NOT pinned
    """
)

FOLD_TURNS = text(
    """
    WITH turns AS (
        DELETE FROM memories m
        USING unnest(CAST(:sessions AS text[]), CAST(:episode_ids AS bigint[]))
            AS b(session_id, episode_memory_id)
        WHERE m.session_id = b.session_id AND m.kind = 'turn' AND NOT m.pinned
        RETURNING b.episode_memory_id,
            m.access_count + coalesce((
                SELECT p.hits FROM memory_access_pending p
                WHERE p.memory_id = m.id AND p.namespace = m.namespace), 0) AS access_count,
            coalesce((
                SELECT p.last_accessed_at FROM memory_access_pending p
                WHERE p.memory_id = m.id AND p.namespace = m.namespace), m.last_accessed_at)
                AS last_accessed_at
    ), sums AS (
        SELECT episode_memory_id, sum(access_count) AS n, max(last_accessed_at) AS touched,
               count(*) AS removed
        FROM turns GROUP BY episode_memory_id
    ), kept AS (
        UPDATE memories m
        SET tier = 'compressed',
            access_count = m.access_count + coalesce(s.n, 0),
            last_accessed_at = greatest(m.last_accessed_at, s.touched)
        FROM unnest(CAST(:episode_ids AS bigint[])) AS b(id)
        LEFT JOIN sums s ON s.episode_memory_id = b.id
        WHERE m.id = b.id
        RETURNING m.id
    )
    SELECT coalesce((SELECT sum(removed) FROM sums), 0) AS removed,
           (SELECT count(*) FROM kept) AS kept
    """
)

RESUMMARISE = text(
    """
    UPDATE memories m SET content = b.summary, embedding = CAST(b.vec AS vector)
    FROM unnest(CAST(:ids AS bigint[]), CAST(:summaries AS text[]), CAST(:vectors AS text[]))
        AS b(id, summary, vec)
    WHERE m.id = b.id
    """
)

DELETE_MESSAGES = text(
    """
    DELETE FROM chat_messages c
    USING unnest(CAST(:sessions AS text[]), CAST(:last_at AS timestamptz[])) AS b(sid, last_at)
    WHERE c.session_id = b.sid AND c.ts <= b.last_at
    """
)


@dataclass(frozen=True)
class CompressCandidate:
    session_id: str
    namespace: str
    episode_memory_id: int
    summary: str
    last_at: datetime
    messages: int
    title: str | None = None


def compressible(
    session: Session, cutoff: datetime, namespace: str | None, shard: Shard | None = None
) -> list[CompressCandidate]:
    """Every session (of a namespace, a shard) ready to be compressed, by id."""
    params = {"cutoff": cutoff, "namespace": namespace, **shard_params(shard)}
    return [CompressCandidate(*row) for row in session.execute(COMPRESSIBLE, params)]


def session_messages(session: Session, session_ids: Sequence[str]) -> list[Any]:
    """The raw messages of these sessions, ordered by session, time and id."""
    return list(session.execute(SESSION_MESSAGES, {"sessions": list(session_ids)}))


def count_turns(session: Session, session_ids: Sequence[str]) -> int:
    """How many ``turn`` memories compression of these sessions would remove."""
    return int(session.execute(TURN_COUNTS, {"sessions": list(session_ids)}).scalar_one())


def fold_sessions(session: Session, batch: Sequence[CompressCandidate]) -> tuple[int, int]:
    """Turns folded into their episode memory and raw messages deleted (one transaction)."""
    params = {
        "sessions": [c.session_id for c in batch],
        "episode_ids": [c.episode_memory_id for c in batch],
    }
    removed = int(session.execute(FOLD_TURNS, params).one().removed)
    gone = session.execute(
        DELETE_MESSAGES, {"sessions": params["sessions"], "last_at": [c.last_at for c in batch]}
    )
    return removed, int(getattr(gone, "rowcount", 0))


def resummarise(session: Session, rows: Sequence[tuple[int, str, str]]) -> None:
    """Set (memory id, summary, vector literal) on episode memories whose text changed."""
    if rows:
        ids, summaries, vectors = (list(col) for col in zip(*rows, strict=True))
        session.execute(RESUMMARISE, {"ids": ids, "summaries": summaries, "vectors": vectors})


EPISODE_TEXTS = text("SELECT id, content FROM memories WHERE id = ANY(CAST(:ids AS bigint[]))")

# Opt-in deletion. Hot rows past the cutoff, and then whole sessions whose conversation
# ended before it (their episode, state and any memory left cascade); pinned ones stay.
DELETE_EXPIRED = text(
    f"""
    WITH gone AS (
        DELETE FROM memories
        WHERE occurred_at < :cutoff AND NOT pinned AND NOT :dry_run
          AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
          AND {in_shard("namespace")}
        RETURNING 1
    )
    SELECT CASE WHEN :dry_run THEN (
               SELECT count(*) FROM memories
               WHERE occurred_at < :cutoff AND NOT pinned
                 AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
                 AND {in_shard("namespace")})
           ELSE (SELECT count(*) FROM gone) END
    """
)
DELETE_EXPIRED_SESSIONS = text(
    f"""
    DELETE FROM chat_sessions s
    USING episodes e
    WHERE e.session_id = s.id AND e.ended_at < :cutoff
      AND (CAST(:namespace AS text) IS NULL OR s.namespace = :namespace)
      AND {in_shard("s.namespace")}
      AND NOT EXISTS (SELECT 1 FROM chat_messages c WHERE c.session_id = s.id AND c.ts >= :cutoff)
      AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.session_id = s.id AND m.pinned)
      AND NOT EXISTS (SELECT 1 FROM archived_memories a WHERE a.session_id = s.id)
    """
)


def memory_texts(session: Session, ids: Sequence[int]) -> dict[int, str]:
    return {int(i): str(c) for i, c in session.execute(EPISODE_TEXTS, {"ids": list(ids)})}


def delete_expired(
    session: Session,
    cutoff: datetime,
    namespace: str | None,
    *,
    dry_run: bool,
    shard: Shard | None = None,
) -> tuple[int, int]:
    """Delete (or count) hot memories and sessions past the cutoff (of a namespace, a
    shard); (memories, sessions)."""
    params = {"cutoff": cutoff, "dry_run": dry_run, "namespace": namespace, **shard_params(shard)}
    rows = int(session.execute(DELETE_EXPIRED, params).scalar_one())
    if dry_run:
        return rows, 0
    gone = session.execute(DELETE_EXPIRED_SESSIONS, params)
    return rows, int(getattr(gone, "rowcount", 0))
