"""Turns ranked within their session: the sessions the best hits point to bring up their
turns that best match the question.

A question about a conversation ("which campsite did we book?") is often matched best by
the session's summary or by one turn of it, while its evidence is another turn of that
session, worded unlike the question and outranked by look-alikes from other sessions.
With ``session`` = s weighted, the sessions of the best confident session-summary or turn
hits (``SESSIONS`` of them; a session's first such hit is its pointer) each bring their
``TURNS`` turns nearest the query's vector (in the search's namespace, tiers, kinds and
time range), each scoring at least ``s x the pointer's score x min(1, its cosine / the
pointer's cosine)``: taken into the results if the candidates missed it, lifted if it
ranked lower. A turn as near the question as its pointer comes at s of it, one half as
near at s/2; a clearly more relevant hit still ranks first, and a weak session's turns
stay low.

It costs one statement (a session's turns through the session index, ordered by their
distance to the query) and no model work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection, text

from storage.kernel.settings import RetrievalSettings
from storage.retrieval._timeframe import QueryTime
from storage.retrieval._types import Hit
from storage.retrieval.candidates import pool_target
from storage.retrieval.candidates import rows as fetch
from storage.retrieval.rank._ranking import weights_for, with_lifts
from storage.retrieval.rank._sources import SESSION_KINDS, one_per_source
from storage.server.binary_arrays import Int8Array, TextArray

# How many sessions bring their turns (those of the best pointing hits), and how many turns
# each brings.
SESSIONS = 5
TURNS = 3
_POINTERS = SESSION_KINDS | {"turn"}

# The ``:turns`` turns of each session nearest the query's vector, within the search's
# namespace, tiers, kinds and time range, with what ranking reads of a candidate; their
# own BM25 is not computed (0): their score comes from the session's pointer.
# The namespace is a filter (``IS TRUE``), not an index condition, as in ``_context``: the
# session's own index finds its handful of turns; ANDed with the namespace's btree the lookup
# grew with the namespace.
SESSION_TURNS = text(
    """
    WITH s AS (
        SELECT * FROM unnest(CAST(:sessions AS text[]), CAST(:pointers AS bigint[]))
            AS s(session_id, pointer)
    )
    SELECT s.pointer AS anchor, m.id, m.namespace, m.kind, m.content, m.importance,
           m.vehemence, m.access_count + coalesce(p.hits, 0) AS access_count,
           coalesce(p.last_accessed_at, m.last_accessed_at) AS last_accessed_at,
           m.occurred_at, m.created_at, m.session_id, m.message_ids, m.tier,
           1 - t.dist AS cosine, 0.0 AS bm25
    FROM s CROSS JOIN LATERAL (
        SELECT n.id, n.embedding <=> CAST(:qvec AS vector) AS dist FROM memories n
        WHERE n.session_id = s.session_id AND n.kind = 'turn'
          AND (n.namespace = :namespace) IS TRUE
          AND n.tier = ANY(CAST(:tiers AS text[]))
          AND (CAST(:kinds AS text[]) IS NULL OR 'turn' = ANY(CAST(:kinds AS text[])))
          AND (CAST(:start AS timestamptz) IS NULL OR n.occurred_at >= :start)
          AND (CAST(:end AS timestamptz) IS NULL OR n.occurred_at < :end)
        ORDER BY 2, n.id LIMIT :turns
    ) t
    JOIN memories m ON m.id = t.id
    LEFT JOIN memory_access_pending p ON p.memory_id = m.id AND p.namespace = m.namespace
    ORDER BY s.pointer, t.dist, m.id
    """
)


def pointers(hits: Sequence[Hit]) -> dict[str, Hit]:
    """The sessions of the best ``SESSIONS`` confident session-summary or turn hits, each
    with its best such hit (a question about nothing in memory points nowhere)."""
    found: dict[str, Hit] = {}
    for h in hits:
        if len(found) >= SESSIONS:
            break
        if h.kind in _POINTERS and h.session_id is not None and h.memory_id is not None:
            if not h.low_confidence:
                found.setdefault(h.session_id, h)
    return found


def session_turn_rows(
    conn: Connection, params: Mapping[str, Any], pointed: Mapping[str, Hit], *, prepare: bool
) -> list[Any]:
    """The best turns of each pointed session, each with its pointer's id (``anchor``)."""
    keys = ("namespace", "qvec", "tiers", "kinds", "start", "end")
    asked = {k: params[k] for k in keys} | {
        "sessions": TextArray(pointed),
        # A pointer is a memory (``pointers``): its id is never None.
        "pointers": Int8Array(cast(list[int], [h.memory_id for h in pointed.values()])),
        "turns": TURNS,
    }
    return list(fetch(conn, SESSION_TURNS, asked, prepare=prepare))


def in_sessions(
    hits: Sequence[Hit],
    found: Sequence[Any],
    share: float,
    when: QueryTime,
    weights: Mapping[str, float],
    half_life: float,
) -> list[Hit]:
    """``hits`` with each pointed session's best turns at ``share`` x its pointer's score x
    min(1, their cosine / the pointer's), at least; best first (ties: the newer, then the
    lower id). A lifted turn's ``factors["session"]`` is its multiplier of the score."""
    score = {h.memory_id: h.score for h in hits if h.memory_id is not None}
    cosine = {h.memory_id: h.factors.get("cosine", 0.0) for h in hits}
    lifts: dict[int, tuple[float, float, Any]] = {}
    for row in found:
        if row.anchor not in score or cosine[row.anchor] <= 0:
            continue
        part = share * min(1.0, max(0.0, float(row.cosine)) / cosine[row.anchor])
        value = part * score[row.anchor]
        if value > lifts.get(row.id, (0.0,))[0]:
            lifts[row.id] = (value, part, row)
    return with_lifts(hits, lifts, "session", when, weights, half_life)


def with_sessions(
    conn: Connection,
    settings: RetrievalSettings,
    params: dict[str, Any] | None,
    hits: Iterable[Hit],
    limit: int,
    when: QueryTime,
    weights: Mapping[str, float],
) -> list[Hit]:
    """The pool of a search of ``limit`` (``pool_target``: the same for every ``limit`` up
    to ``POOL_HITS``), one place per source, with the best turns of the sessions its best
    hits point to brought up if ``session`` is weighted (one more statement). ``params``:
    the memories' statement's (None: no memory, so no turn)."""
    pool = one_per_source(hits, pool_target(limit))
    share = weights.get("session", 0.0)
    if not share or params is None:
        return pool
    pointed = pointers(pool)
    if not pointed:
        return pool
    # A search of kinds without turns finds none there (the statement tests it): no
    # round trip, the same ranking.
    turns = params["kinds"] is None or "turn" in params["kinds"]
    prepare = settings.prepared_statements
    found = session_turn_rows(conn, params, pointed, prepare=prepare) if turns else []
    used = weights_for(weights, when)
    lifted = in_sessions(pool, found, share, when, used, settings.half_life_days)
    return one_per_source(lifted, pool_target(limit))
