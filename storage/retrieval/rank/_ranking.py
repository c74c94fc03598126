"""Ranking of candidate rows: relevance parts as shares of the query's best, the composite
score, and newer statements first for a question about now.

Pure: no database and no clock. ``storage.kernel.scoring`` holds the factor formulas.
Document chunks (kind ``"doc"``) are ranked by the same formula as memories; which hits
keep a place of their own is ``_sources``'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from storage.kernel import scoring
from storage.kernel.settings import RetrievalSettings
from storage.retrieval._timeframe import QueryTime
from storage.retrieval._types import Hit
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
    return _shares([float(r.cosine) for r in rows], [float(r.bm25) for r in rows], min_cosine)


def _shares(
    cosines: Sequence[float], bm25s: Sequence[float], min_cosine: float
) -> tuple[list[float], list[float]]:
    """``relevance_parts`` of candidates' cosines and BM25 scores."""
    cosines = [c if c > 0.0 else 0.0 for c in cosines]  # max(0.0, c), without a call
    scores = [b if b > 0.0 else 0.0 for b in bm25s]
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

    Every candidate is scored, a weighted factor at a time (``scoring.Composer.scores``),
    but a hit is built only when it is taken, with the factors that only show (``_BATCH``
    hits at a time): a search keeps ``limit`` of a pool of about a hundred (0.29 ms a
    search for the pools of 600 captured searches, against 0.44 scoring each candidate and
    building each hit's factors one call per factor). ``when``: the search's time and what
    its question says about time (``_timeframe``); ``restated``: which candidates newer
    ones restate (``_restated``), needed only when ``supersede`` is weighted.

    Nothing relevant, nothing returned: a hit that shares no word with the query and whose
    cosine is under ``min_cosine`` is marked ``low_confidence``, and when no candidate
    shares a word and none reaches two thirds of it, the query is about nothing in memory
    and gets no hits. The floor judges the query, not each candidate: evidence worded
    unlike the question often has both a low cosine and no shared word, yet ranks well
    among the candidates of a query that does match something (measured: 0.90 recall@10
    against 0.83 when every candidate had to pass it).
    """
    cosines = [float(r.cosine) for r in rows]
    bm25s = [float(r.bm25) for r in rows]
    floor = min_cosine * 2 / 3
    if not any(b > 0 or c >= floor for c, b in zip(cosines, bm25s, strict=True)):
        return
    dense, lexical = _shares(cosines, bm25s, min_cosine)
    share, half_life = settings.dense_share, settings.half_life_days
    fused = [share * d + (1 - share) * lx for d, lx in zip(dense, lexical, strict=True)]
    used = weights_for(weights, when)
    composer = scoring.Composer(used)
    # Scored a factor at a time over every candidate, only the weighted ones (a few Python
    # calls a candidate, no mapping built for it); a hit shows them all (the same values).
    parts = {"semantic": fused, "dense": dense, "lexical": lexical}
    relevance = composer.relevance([parts[name] for name, _ in composer.rel], len(rows))
    boosts = [FACTOR[name](rows, when, half_life) for name, _ in composer.other]
    values = composer.scores(relevance, boosts)
    after: list[int | None] = [None] * len(rows)
    if used["supersede"] and restated is not None and composer.rel_weight:
        values, after = after_newer(rows, relevance, values, restated, used["supersede"])
    # Best first; ties: the newer, then the lower id. Descending on (score, time, -id): the
    # rows' times compared as they are, not each made a timestamp (0.06 ms less a search).
    keys = list(zip(values, [r.occurred_at for r in rows], [-r.id for r in rows], strict=True))
    order = sorted(range(len(rows)), key=keys.__getitem__, reverse=True)
    # The other factors of the hits taken, a batch of them at a time: a search takes about
    # fifty of a pool of a hundred-odd (``one_per_source``).
    for start in range(0, len(order), _BATCH):
        taken = order[start : start + _BATCH]
        batch = [rows[i] for i in taken]
        others = zip(*(of(batch, when, half_life) for of in FACTOR.values()), strict=True)
        for i, row, factor in zip(taken, batch, others, strict=True):
            shown = (fused[i], dense[i], lexical[i], *factor, cosines[i], bm25s[i])
            low = bm25s[i] <= 0 and cosines[i] < min_cosine
            yield hit_of(
                row,
                values[i],
                dict(zip(_SHOWN, shown, strict=True)),
                used,
                when=when,
                restated_by=after[i],
                low_confidence=low,
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


def _ages(rows: Sequence[Any], when: QueryTime) -> list[float]:
    now = when.as_of
    return [(now - r.occurred_at).total_seconds() / 86400 for r in rows]


def _idle(rows: Sequence[Any], when: QueryTime) -> list[float]:
    """The days since each row's last access (never accessed: since it happened)."""
    now = when.as_of
    return [(now - (r.last_accessed_at or r.occurred_at)).total_seconds() / 86400 for r in rows]


def _windows(rows: Sequence[Any], when: QueryTime) -> list[float]:
    window = when.window
    return [0.0] * len(rows) if window is None else [window.inside(r.occurred_at) for r in rows]


# Each factor of candidate rows' scores other than relevance, a value per row (one call
# for them all), as of the search's time and for its question, with a half-life.
FACTOR: dict[str, Callable[[Sequence[Any], QueryTime, float], list[float]]] = {
    "recency": lambda rows, when, hl: scoring.recencies(_ages(rows, when), hl),
    "importance": lambda rows, when, hl: scoring.importances([r.importance for r in rows]),
    "frequency": lambda rows, when, hl: scoring.frequencies([r.access_count for r in rows]),
    "vehemence": lambda rows, when, hl: [float(r.vehemence) for r in rows],
    "salience": lambda rows, when, hl: scoring.saliences(
        [r.access_count for r in rows], _idle(rows, when), hl
    ),
    "window": lambda rows, when, hl: _windows(rows, when),
}
# A hit's factors, in the order it shows them: relevance's parts, the others, the raw ones.
_SHOWN = ("semantic", "dense", "lexical", *FACTOR, "cosine", "bm25")
# How many hits' other factors are computed at once: a search's pool takes fifty hits
# (``POOL_HITS``) of a hundred-odd candidates, more where some cite the same messages.
_BATCH = 25


def factors_of(
    row: Any, dense: float, lexical: float, relevance: float, when: QueryTime, half_life: float
) -> dict[str, float]:
    """Every factor of a candidate row's score for a search asked at ``when``."""
    others = (of([row], when, half_life)[0] for of in FACTOR.values())
    shown = (relevance, dense, lexical, *others, float(row.cosine), float(row.bm25))
    return dict(zip(_SHOWN, shown, strict=True))


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
