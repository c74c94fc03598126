"""Ranking of candidate rows: relevance parts as shares of the query's best, the composite
score, newer statements first for a question about now, and one place per source.

Pure: no database and no clock. ``storage.kernel.scoring`` holds the factor formulas. A long
message is stored as several ``turn`` chunks that cite it, and a fact cites the turn it
came from; ``one_per_source`` keeps the best-ranked of such hits, so a message fills one
place in the results. Document chunks (kind ``"doc"``) are ranked by the same formula and
each keeps its own place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from storage.kernel import scoring
from storage.kernel.settings import RetrievalSettings
from storage.long_term import LONG_TERM_KIND
from storage.retrieval._timeframe import QueryTime
from storage.retrieval._types import DOC_KIND, Hit
from storage.retrieval.candidates import doc_source
from storage.retrieval.rank._restated import Restated


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
    when: QueryTime,
    weights: Mapping[str, float],
    settings: RetrievalSettings,
    min_cosine: float = 0.0,
    restated: Restated | None = None,
) -> list[Hit]:
    """Every candidate as a hit, best first (``ranked``, all of it)."""
    return list(ranked(rows, when, weights, settings, min_cosine, restated))


def ranked(
    rows: Sequence[Any],
    when: QueryTime,
    weights: Mapping[str, float],
    settings: RetrievalSettings,
    min_cosine: float = 0.0,
    restated: Restated | None = None,
) -> Iterator[Hit]:
    """Hits best first: fused relevance with the other factors as bounded boosts, then, for
    a question about now, each older memory right after the newer ones that restate it.

    Every candidate is scored, but a hit is built only when it is taken: a search keeps
    ``limit`` of a pool of about a hundred. ``when``: the search's time and what its
    question says about time (``_timeframe``); ``restated``: which candidates newer ones
    restate (``_restated``), needed only when ``supersede`` is weighted.

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
    used = weights_for(weights, when)
    composer = scoring.Composer(used)
    # The score needs only the weighted factors, each times its weight in the composer's
    # order (no mapping built per candidate); a hit shows them all (the same values).
    relevance = [(_PART[name], w) for name, w in composer.rel]
    boosts = [(FACTOR[name], w) for name, w in composer.other]
    parts = [(d, lx, share * d + (1 - share) * lx) for d, lx in zip(dense, lexical, strict=True)]
    values = [
        composer.combine(
            [w * p[i] for i, w in relevance], [w * of(r, when, half_life) for of, w in boosts]
        )
        for r, p in zip(rows, parts, strict=True)
    ]
    after: list[int | None] = [None] * len(rows)
    if used["supersede"] and restated is not None and composer.rel_weight:
        mean = [sum(w * p[i] for i, w in relevance) / composer.rel_weight for p in parts]
        values, after = after_newer(rows, mean, values, restated, used["supersede"])
    # Best first; ties: the newer, then the lower id. Descending on (score, time, -id): the
    # rows' times compared as they are, not each made a timestamp (0.06 ms less a search).
    order = sorted(
        range(len(rows)), key=lambda i: (values[i], rows[i].occurred_at, -rows[i].id), reverse=True
    )
    for i in order:
        row = rows[i]
        factors = factors_of(row, *parts[i], when, half_life)
        low = factors["bm25"] <= 0 and factors["cosine"] < min_cosine
        yield hit_of(
            row, values[i], factors, used, when=when, restated_by=after[i], low_confidence=low
        )


def weights_for(weights: Mapping[str, float], when: QueryTime) -> dict[str, float]:
    """The weights a question uses: ``window`` only if it names a time, ``supersede`` only
    if it asks about now (0 otherwise, so a question that asks neither is ranked the same
    as with neither weighted)."""
    used = {name: float(weights.get(name, 0.0)) for name in scoring.WEIGHTS}
    if when.window is None:
        used["window"] = 0.0
    if not when.about_now:
        used["supersede"] = 0.0
    return used


def after_newer(
    rows: Sequence[Any],
    relevance: Sequence[float],
    scores: Sequence[float],
    restated: Restated,
    reach: float,
) -> tuple[list[float], list[int | None]]:
    """Scores with each older memory placed right after the newer ones that restate it and
    are at least ``1 - reach`` as relevant, and the id of the one it follows.

    ``final(a) = min(score(a), min(score(b) for such b) - tiny)``, from the scores before
    the rule, so the order of the pairs does not matter. An older memory already below
    them keeps its place; nothing moves up.
    """
    if not rows:
        return [], []
    rel, score = np.asarray(relevance), np.asarray(scores)
    newer = restated & (rel[None, :] >= (1 - reach) * rel[:, None])  # [older, newer]
    their = np.where(newer, score[None, :], np.inf)  # each older one's newer ones' scores
    which = their.argmin(axis=1)
    lowest = their[np.arange(len(rows)), which]
    moved = lowest - _TINY < score
    final = np.where(moved, lowest - _TINY, score).tolist()
    after = [rows[j].id if m else None for j, m in zip(which.tolist(), moved.tolist(), strict=True)]
    return final, after


# How far below a newer restatement an older memory is placed: below it, above the rest.
_TINY = 1e-9
# Where each relevance factor is in a candidate's (dense, lexical, fused) parts.
_PART = {"dense": 0, "lexical": 1, "semantic": 2}


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
    factors = factors_of(row, dense, lexical, relevance, QueryTime(now), half_life)
    return hit_of(row, scoring.composite(factors, weights), factors, dict(weights))


def _days(since: datetime, now: datetime) -> float:
    return (now - since).total_seconds() / 86400


def _window(row: Any, when: QueryTime) -> float:
    return 0.0 if when.window is None else when.window.inside(row.occurred_at)


# Each factor of a candidate row's score other than relevance, as of the search's time and
# for its question, with a half-life.
FACTOR: dict[str, Callable[[Any, QueryTime, float], float]] = {
    "recency": lambda r, when, hl: scoring.recency(_days(r.occurred_at, when.as_of), hl),
    "importance": lambda r, when, hl: scoring.importance(r.importance),
    "frequency": lambda r, when, hl: scoring.frequency(r.access_count),
    "vehemence": lambda r, when, hl: float(r.vehemence),
    "salience": lambda r, when, hl: scoring.salience(
        r.access_count, _days(r.last_accessed_at or r.occurred_at, when.as_of), hl
    ),
    "window": lambda r, when, hl: _window(r, when),
}


def factors_of(
    row: Any, dense: float, lexical: float, relevance: float, when: QueryTime, half_life: float
) -> dict[str, float]:
    """Every factor of a candidate row's score for a search asked at ``when``."""
    out = {"semantic": relevance, "dense": dense, "lexical": lexical}
    out.update((name, of(row, when, half_life)) for name, of in FACTOR.items())
    out["cosine"], out["bm25"] = float(row.cosine), float(row.bm25)
    return out


def hit_of(
    row: Any,
    score: float,
    factors: dict[str, float],
    weights: dict[str, float],
    *,
    when: QueryTime | None = None,
    restated_by: int | None = None,
    low_confidence: bool = False,
) -> Hit:
    doc = doc_source(row)
    return Hit.from_dict(
        {
            "memory_id": None if doc is not None else row.id,
            "namespace": row.namespace,
            "kind": row.kind,
            "content": row.content,
            "score": score,
            "factors": factors,
            "weights": weights,
            "occurred_at": row.occurred_at,
            "created_at": row.created_at,
            "session_id": row.session_id,
            "message_ids": tuple(row.message_ids),
            "tier": row.tier,
            "sources": tuple(getattr(row, "sources", None) or ()),
            "low_confidence": low_confidence,
            "doc": doc,
            "window": None if when is None else when.window,
            "restated_by": restated_by,
            "passage": "",
        }
    )


def with_lifts(
    hits: Sequence[Hit],
    lifts: Mapping[int, tuple[float, float, Any]],
    factor: str,
    when: QueryTime,
    weights: Mapping[str, float],
    half_life: float,
) -> list[Hit]:
    """``hits`` with each memory of ``lifts`` (its id: the score it gets at least, its
    ``factors[factor]``, its candidate row) lifted if it ranked lower, or taken in from its
    row if the candidates missed it; best first (ties: the newer, then the lower id)."""
    out: list[Hit] = []
    for hit in hits:
        value, part, _ = lifts.get(hit.memory_id or -1, (0.0, 0.0, None))
        lift = value > hit.score
        out.append(hit.changed(score=value, factors=hit.factors | {factor: part}) if lift else hit)
    present = {h.memory_id for h in hits}
    used = dict(weights)
    for memory_id, (value, part, row) in lifts.items():
        if memory_id not in present:
            factors = factors_of(row, 0.0, 0.0, 0.0, when, half_life) | {factor: part}
            out.append(hit_of(row, value, factors, used, when=when))
    out.sort(key=lambda h: (-h.score, -h.occurred_at.timestamp(), h.memory_id or 0))
    return out
