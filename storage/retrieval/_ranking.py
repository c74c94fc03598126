"""Ranking of candidate rows: relevance parts normalised per query, then the composite score.

Pure: no database and no clock. ``storage.scoring`` holds the factor formulas. A long
message is stored as several ``turn`` chunks that cite it; ``one_per_message`` keeps the
best-ranked of them, so a message fills one place in the results however long it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from storage import scoring
from storage.config import RetrievalSettings
from storage.retrieval._types import Hit


def rank(
    rows: Sequence[Any],
    now: datetime,
    weights: Mapping[str, float],
    settings: RetrievalSettings,
) -> list[Hit]:
    """Hits best first: fused relevance (dense and lexical, min-max per query) and the rest."""
    dense = scoring.min_max([float(r.cosine) for r in rows])
    lexical = scoring.min_max([float(r.bm25) for r in rows])
    share = settings.dense_share
    hits = [
        make_hit(r, d, lx, share * d + (1 - share) * lx, now, weights, settings.half_life_days)
        for r, d, lx in zip(rows, dense, lexical, strict=True)
    ]
    hits.sort(key=lambda h: (-h.score, -h.occurred_at.timestamp(), h.memory_id))
    return hits


Place = tuple[str, tuple[str, ...]] | int


def message_key(
    kind: str, session_id: str | None, message_ids: Sequence[str], memory_id: int
) -> Place:
    """What one place in the results is: a turn's message (all its chunks), else the memory."""
    if kind == "turn" and session_id is not None:
        return (session_id, tuple(message_ids))
    return memory_id


def distinct_messages(rows: Sequence[Any]) -> int:
    """How many places candidate rows can fill once chunks of one message count once."""
    return len({message_key(r.kind, r.session_id, r.message_ids, r.id) for r in rows})


def one_per_message(hits: Sequence[Hit]) -> list[Hit]:
    """The hits in order, each message's turn chunks after its best one left out."""
    seen: set[Place] = set()
    kept: list[Hit] = []
    for hit in hits:
        key = message_key(hit.kind, hit.session_id, hit.message_ids, hit.memory_id)
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept


def make_hit(
    row: Any,
    dense: float,
    lexical: float,
    relevance: float,
    now: datetime,
    weights: Mapping[str, float],
    half_life: float,
) -> Hit:
    """A hit from a candidate row and its normalised relevance parts, scored as of now."""
    age = (now - row.occurred_at).total_seconds() / 86400
    touched = row.last_accessed_at or row.occurred_at
    factors = {
        "semantic": relevance,
        "dense": dense,
        "lexical": lexical,
        "recency": scoring.recency(age, half_life),
        "importance": scoring.importance(row.importance),
        "frequency": scoring.frequency(row.access_count),
        "vehemence": float(row.vehemence),
        "salience": scoring.salience(
            row.access_count, (now - touched).total_seconds() / 86400, half_life
        ),
        "cosine": float(row.cosine),
        "bm25": float(row.bm25),
    }
    return Hit(
        memory_id=row.id,
        namespace=row.namespace,
        kind=row.kind,
        content=row.content,
        score=scoring.composite(factors, weights),
        factors=factors,
        weights=dict(weights),
        occurred_at=row.occurred_at,
        created_at=row.created_at,
        session_id=row.session_id,
        message_ids=tuple(row.message_ids),
        tier=row.tier,
    )
