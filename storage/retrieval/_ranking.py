"""Ranking of candidate rows: relevance parts as shares of the query's best, the composite
score, and one place per source.

Pure: no database and no clock. ``storage.kernel.scoring`` holds the factor formulas. A long
message is stored as several ``turn`` chunks that cite it, and a fact cites the turn it
came from; ``one_per_source`` keeps the best-ranked of such hits, so a message fills one
place in the results. Document chunks (kind ``"doc"``) are ranked by the same formula and
each keeps its own place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from storage.kernel import scoring
from storage.kernel.settings import RetrievalSettings
from storage.long_term import LONG_TERM_KIND
from storage.retrieval._documents import doc_source
from storage.retrieval._types import DOC_KIND, Hit


def relevance_parts(
    rows: Sequence[Any], min_cosine: float = 0.0
) -> tuple[list[float], list[float]]:
    """Dense and lexical relevance of each candidate, as a share of the query's best.

    A ratio to the best candidate, not min-max: the weakest candidate of a pool is not
    pushed to 0 nor a weak best one's neighbours spread to [0, 1], so the parts keep their
    proportions and the boosts of ``scoring.composite`` reorder only near-equals. The best
    dense and lexical candidates are in every pool, so the ratios do not depend on its size.
    """
    cosines = [max(0.0, float(r.cosine)) for r in rows]
    scores = [max(0.0, float(r.bm25)) for r in rows]
    # A best candidate under the floor is not fully relevant: it is a share of the floor.
    top_cosine = max(max(cosines, default=0.0), min_cosine)
    top_score = max(scores, default=0.0)
    dense = [c / top_cosine if top_cosine > 0 else 0.0 for c in cosines]
    lexical = [b / top_score if top_score > 0 else 0.0 for b in scores]
    return dense, lexical


def rank(
    rows: Sequence[Any],
    now: datetime,
    weights: Mapping[str, float],
    settings: RetrievalSettings,
    min_cosine: float = 0.0,
) -> list[Hit]:
    """Every candidate as a hit, best first (``ranked``, all of it)."""
    return list(ranked(rows, now, weights, settings, min_cosine))


def ranked(
    rows: Sequence[Any],
    now: datetime,
    weights: Mapping[str, float],
    settings: RetrievalSettings,
    min_cosine: float = 0.0,
) -> Iterator[Hit]:
    """Hits best first: fused relevance with the other factors as bounded boosts.

    Every candidate is scored, but a hit is built only when it is taken: a search keeps
    ``limit`` of a pool of about a hundred.

    Nothing relevant, nothing returned: a hit that shares no word with the query and whose
    cosine is under ``min_cosine`` is marked ``low_confidence``, and when no candidate
    shares a word and none reaches two thirds of it, the query is about nothing in memory
    and gets no hits. The floor judges the query, not each candidate: evidence worded
    unlike the question often has both a low cosine and no shared word, yet ranks well
    among the candidates of a query that does match something (measured: 0.90 recall@10
    against 0.83 when every candidate had to pass it).
    """
    if not any(float(r.bm25) > 0 or float(r.cosine) >= min_cosine * 2 / 3 for r in rows):
        return
    dense, lexical = relevance_parts(rows, min_cosine)
    share, half_life = settings.dense_share, settings.half_life_days
    composer = scoring.Composer(weights)
    # The score needs only the weighted factors, each times its weight in the composer's
    # order (no mapping built per candidate); a hit shows them all (the same values).
    relevance = [(_PART[name], w) for name, w in composer.rel]
    boosts = [(FACTOR[name], w) for name, w in composer.other]
    scored = []
    for r, d, lx in zip(rows, dense, lexical, strict=True):
        parts = (d, lx, share * d + (1 - share) * lx)
        value = composer.combine(
            [w * parts[i] for i, w in relevance], [w * of(r, now, half_life) for of, w in boosts]
        )
        scored.append((-value, -r.occurred_at.timestamp(), r.id, r, parts))
    scored.sort(key=_BEST_FIRST)  # ties: the newer, then the lower id
    used = dict(weights)
    for negated, _, _, row, parts in scored:
        factors = factors_of(row, *parts, now, half_life)
        low = factors["bm25"] <= 0 and factors["cosine"] < min_cosine
        yield hit_of(row, -negated, factors, used, low_confidence=low)


_BEST_FIRST = itemgetter(0, 1, 2)
# Where each relevance factor is in a candidate's (dense, lexical, fused) parts.
_PART = {"dense": 0, "lexical": 1, "semantic": 2}


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


# Kinds that summarise a whole session: they cite all its messages and never stand in for
# the message-level memories of that session.
SESSION_KINDS = frozenset({"episode", "task_card"})


def one_per_source(hits: Iterable[Hit], limit: int | None = None) -> list[Hit]:
    """The hits in order, leaving out each hit whose sources a better hit already shows.

    A memory citing messages of a session that a better-ranked memory also cites (all of
    them) says nothing new: a fact and the turn it came from, the chunks of one long
    message. A long-term entry and the facts merged into it collapse the same way, in
    whichever order they rank.
    """
    kept: list[Hit] = []
    shown: set[int] = set()
    merged: set[int] = set()
    cited: dict[str, list[frozenset[str]]] = {}
    for hit in hits:
        if hit.kind == DOC_KIND:
            pass  # a document chunk: its own place (its id is no memory's)
        elif hit.kind == LONG_TERM_KIND:
            if shown.intersection(hit.sources):
                continue
            merged.update(hit.sources)
        elif hit.memory_id in merged:
            continue
        elif hit.session_id is not None and hit.message_ids and hit.kind not in SESSION_KINDS:
            messages = frozenset(hit.message_ids)
            seen = cited.setdefault(hit.session_id, [])
            if any(messages <= other for other in seen):
                continue
            seen.append(messages)
        kept.append(hit)
        if hit.memory_id is not None:  # a memory (a chunk's id is no memory's)
            shown.add(hit.memory_id)
        if limit is not None and len(kept) >= limit:
            break
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
    factors = factors_of(row, dense, lexical, relevance, now, half_life)
    return hit_of(row, scoring.composite(factors, weights), factors, dict(weights))


def _days(since: datetime, now: datetime) -> float:
    return (now - since).total_seconds() / 86400


# Each factor of a candidate row's score other than relevance, as of now, for a half-life.
FACTOR: dict[str, Callable[[Any, datetime, float], float]] = {
    "recency": lambda r, now, hl: scoring.recency(_days(r.occurred_at, now), hl),
    "importance": lambda r, now, hl: scoring.importance(r.importance),
    "frequency": lambda r, now, hl: scoring.frequency(r.access_count),
    "vehemence": lambda r, now, hl: float(r.vehemence),
    "salience": lambda r, now, hl: scoring.salience(
        r.access_count, _days(r.last_accessed_at or r.occurred_at, now), hl
    ),
}


def factors_of(
    row: Any, dense: float, lexical: float, relevance: float, now: datetime, half_life: float
) -> dict[str, float]:
    """Every factor of a candidate row's score as of now."""
    out = {"semantic": relevance, "dense": dense, "lexical": lexical}
    for name, of in FACTOR.items():
        out[name] = of(row, now, half_life)
    out["cosine"], out["bm25"] = float(row.cosine), float(row.bm25)
    return out


def hit_of(
    row: Any,
    score: float,
    factors: dict[str, float],
    weights: dict[str, float],
    *,
    low_confidence: bool = False,
) -> Hit:
    doc = doc_source(row)
    return Hit(
        memory_id=None if doc is not None else row.id,
        namespace=row.namespace,
        kind=row.kind,
        content=row.content,
        score=score,
        factors=factors,
        weights=weights,
        occurred_at=row.occurred_at,
        created_at=row.created_at,
        session_id=row.session_id,
        message_ids=tuple(row.message_ids),
        tier=row.tier,
        sources=tuple(getattr(row, "sources", None) or ()),
        low_confidence=low_confidence,
        doc=doc,
    )
