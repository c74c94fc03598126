"""Turns found in context: the turns next to a strong hit come up with it.

The evidence of a question is often the turn beside the one that matches it best: the
user's statement before the assistant's reply that repeats its words ("the dolls' house
sounds like a gift she could keep" answers "Ruby turns four; I found a wooden dolls'
house"), the quote before "we're going with them". With ``context`` = c weighted, the
previous and the next turn of each of the best ``ANCHORS`` turn hits (not low-confidence
ones; same session, by time, within the search's tiers, kinds and time range) count at
least c times that hit's score: taken into the results if the candidates missed them,
lifted if they ranked lower.
A clearly more relevant hit still ranks first; a neighbour of a weak hit stays low.

It costs one statement (the neighbours, by the session index) and no model work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, text

from storage.kernel.settings import RetrievalSettings
from storage.retrieval._timeframe import QueryTime
from storage.retrieval._types import Hit
from storage.retrieval.candidates import rows as fetch
from storage.retrieval.rank._ranking import weights_for, with_lifts
from storage.retrieval.rank._sources import one_per_source
from storage.server.binary_arrays import Int8Array

# How many of the best turn hits bring their neighbours: the top of a first page.
ANCHORS = 10
_TURN = "turn"

# The turn before and the turn after each anchor in its session (a long message's chunks
# share its time: the neighbours are other messages), with what ranking reads of a
# candidate; their own BM25 is not computed (0): their score comes from the anchor.
# The namespace tests are filters (IS TRUE), not index conditions: planned generically,
# the walk otherwise ANDed the namespace's (namespace, occurred_at) btree into each
# session lookup, which grew with the namespace (3.5 ms a lookup at 18,000 memories,
# 37 ms a search); the session's own index finds a handful of rows.
NEIGHBOUR_TURNS = text(
    """
    WITH a AS (
        SELECT id, session_id, occurred_at FROM memories
        WHERE id = ANY(CAST(:anchors AS bigint[])) AND (namespace = :namespace) IS TRUE
          AND kind = 'turn' AND session_id IS NOT NULL
    )
    SELECT a.id AS anchor, m.id, m.namespace, m.kind, m.content, m.importance, m.vehemence,
           m.access_count + coalesce(p.hits, 0) AS access_count,
           coalesce(p.last_accessed_at, m.last_accessed_at) AS last_accessed_at,
           m.occurred_at, m.created_at, m.session_id, m.message_ids, m.tier,
           1 - (m.embedding <=> CAST(:qvec AS vector)) AS cosine, 0.0 AS bm25
    FROM a CROSS JOIN LATERAL (
        (SELECT n.id FROM memories n
         WHERE n.session_id = a.session_id AND n.kind = 'turn'
           AND (n.namespace = :namespace) IS TRUE
           AND n.occurred_at < a.occurred_at
           AND n.tier = ANY(CAST(:tiers AS text[]))
           AND (CAST(:kinds AS text[]) IS NULL OR 'turn' = ANY(CAST(:kinds AS text[])))
           AND (CAST(:start AS timestamptz) IS NULL OR n.occurred_at >= :start)
           AND (CAST(:end AS timestamptz) IS NULL OR n.occurred_at < :end)
         ORDER BY n.occurred_at DESC, n.id DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM memories n
         WHERE n.session_id = a.session_id AND n.kind = 'turn'
           AND (n.namespace = :namespace) IS TRUE
           AND n.occurred_at > a.occurred_at
           AND n.tier = ANY(CAST(:tiers AS text[]))
           AND (CAST(:kinds AS text[]) IS NULL OR 'turn' = ANY(CAST(:kinds AS text[])))
           AND (CAST(:start AS timestamptz) IS NULL OR n.occurred_at >= :start)
           AND (CAST(:end AS timestamptz) IS NULL OR n.occurred_at < :end)
         ORDER BY n.occurred_at, n.id LIMIT 1)
    ) nb
    JOIN memories m ON m.id = nb.id
    LEFT JOIN memory_access_pending p ON p.memory_id = m.id AND p.namespace = m.namespace
    ORDER BY a.id, m.id
    """
)


def anchors(hits: Sequence[Hit]) -> list[int]:
    """The memory ids of the best ``ANCHORS`` turn hits of a session, but low-confidence
    ones (a question about nothing in memory gets no neighbours either)."""
    found = [
        h.memory_id
        for h in hits
        if h.kind == _TURN and h.session_id is not None and not h.low_confidence
    ]
    return [i for i in found if i is not None][:ANCHORS]


def neighbour_rows(
    conn: Connection, params: Mapping[str, Any], ids: Sequence[int], *, prepare: bool
) -> list[Any]:
    """The turns next to the anchors ``ids``, each with its anchor's id (``anchor``)."""
    keys = ("namespace", "qvec", "tiers", "kinds", "start", "end")
    asked = {k: params[k] for k in keys} | {"anchors": Int8Array(ids)}
    return list(fetch(conn, NEIGHBOUR_TURNS, asked, prepare=prepare))


def in_context(
    hits: Sequence[Hit],
    neighbours: Sequence[Any],
    share: float,
    when: QueryTime,
    weights: Mapping[str, float],
    half_life: float,
) -> list[Hit]:
    """``hits`` with each anchor's neighbours at ``share`` of its score at least, best
    first (ties: the newer, then the lower id); a neighbour's ``factors["context"]`` is
    that share of its anchor's score."""
    score = {h.memory_id: h.score for h in hits if h.memory_id is not None}
    lifts: dict[int, tuple[float, float, Any]] = {}
    for row in neighbours:
        if row.anchor in score:
            value = share * score[row.anchor]
            if value > lifts.get(row.id, (0.0,))[0]:
                lifts[row.id] = (value, share, row)
    return with_lifts(hits, lifts, "context", when, weights, half_life)


def with_context(
    conn: Connection,
    settings: RetrievalSettings,
    params: dict[str, Any] | None,
    pool: Sequence[Hit],
    limit: int,
    when: QueryTime,
    weights: Mapping[str, float],
) -> list[Hit]:
    """The first ``limit`` hits, one place per source, with the turns next to the best
    ones brought up if ``context`` is weighted (one more statement): from one pool for
    every ``limit`` up to ``POOL_HITS``. ``pool``: ``with_sessions``', one place per source
    already (``one_per_source`` keeps all of it again: a second pass cost 0.03 ms);
    ``params``: the memories' statement's (None: no memory, so no turn)."""
    share = weights.get("context", 0.0)
    if not share or params is None:
        return list(pool[:limit])
    ids = anchors(pool)
    if not ids:
        return list(pool[:limit])
    found = neighbour_rows(conn, params, ids, prepare=settings.prepared_statements)
    used = weights_for(weights, when)
    return one_per_source(
        in_context(pool, found, share, when, used, settings.half_life_days), limit
    )
