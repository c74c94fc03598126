"""Pure ranking math: the factors of a memory's score and how they combine (DESIGN.md).

- recency    = 0.5 ** (age_days / half_life_days). The seeds write exp(-days/30) and call it
  a 30-day half-life; that curve halves every 20.8 days. This is the true half-life.
- frequency  = min(1, ln(1 + access_count) / ln(100))
- salience   = max(0.01, (1 + 0.1 * access_count) * 0.5 ** (days_since_last_access / 30))
- vehemence  = 0.5 * urgency + 0.3 * |sentiment| + 0.2 * risk
- window     = 1 inside the time window the question names ("last week", "in May"), falling
  to 0 at one window's length outside it (``storage.retrieval._timeframe``)
- relevance  = dense_share * cosine' + (1 - dense_share) * bm25', each a share of the
  query's best candidate, so the presets' "semantic" weight applies to fused relevance
- score      = relevance scaled by bounded boosts from the other factors (``composite``)

Two weights are rules, not factors. ``supersede`` = s: for a question about now
("currently", "still", "jetzt", "今"), an older memory is placed right after each newer one
that restates it and is at least (1 - s) as relevant (``storage.retrieval.rank._ranking``).
``context`` = c: the turns before and after each of the best turn hits score at least c
times that hit (``storage.retrieval.rank._context``). ``session`` = s: the turns nearest the
query of the sessions the best summary or turn hits point to score at least s times that
hit, times their cosine's share of its (``storage.retrieval.rank._sessions``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from storage.kernel.errors import ConfigurationError

FACTORS = (
    "semantic",
    "dense",
    "lexical",
    "recency",
    "importance",
    "frequency",
    "vehemence",
    "salience",
    "window",
)
RELEVANCE = ("semantic", "dense", "lexical")
# Weights that order hits by a rule rather than scale a score: not in ``composite``.
RULES = ("supersede", "context", "session")
# The default ranks by relevance, importance deciding among near-equals (5%: a document
# chunk's feedback moves it among equals); time enters only where the question asks for
# it: a window it names lifts memories from then (up to 1.5x), and for a question about
# now a newer statement of a thing ranks before an older one at least 70% as relevant. A
# recency boost for every question hid old answers among near-equals (bench/eval.py: R@10
# on evidence 180+ days old 0.65 against 0.69 for relevance alone). The turns next to the
# best turn hits score at least 0.7 of them (own set R@10: 0.757, 0.776, 0.786 and 0.787
# for 0.3, 0.5, 0.7 and 0.9; multi-hop highest at 0.7). The best turns of the sessions the
# best hits point to score at least 0.7 of them as near the question (own set R@10: 0.786,
# 0.798 and 0.805 for 0.5, 0.7 and 0.9; the long-horizon part's newest evidence and
# knowledge updates highest at 0.7).
PRESETS: dict[str, dict[str, float]] = {
    "archivist": {
        "semantic": 1.0,
        "importance": 0.05,
        "window": 0.5,
        "supersede": 0.3,
        "context": 0.7,
        "session": 0.7,
    },
    "librarian": {"semantic": 0.40, "recency": 0.25, "frequency": 0.20, "vehemence": 0.15},
}
WEIGHTS = FACTORS + RULES
DEFAULT_IMPORTANCE = 0.5
SALIENCE_FLOOR = 0.01


# Each factor has a form for many values at once, which ranking calls once per factor for
# a search's candidates: a Python call per value cost more than its arithmetic. ``max(0.0,
# x)`` is written ``x if x > 0.0 else 0.0``, what ``max`` returns (its first argument
# unless the second is greater), and ``min(1.0, x)`` as ``x if x < 1.0 else 1.0``: the
# same floats, NaN and -0.0 included, without a call. The one-value forms take one value.


def recency(age_days: float, half_life_days: float = 30.0) -> float:
    """1 for a memory from now, 0.5 after one half-life; future times count as now."""
    return recencies((age_days,), half_life_days)[0]


def recencies(ages_days: Iterable[float], half_life_days: float = 30.0) -> list[float]:
    """``recency`` of each age."""
    power = math.pow
    return [power(0.5, (age if age > 0.0 else 0.0) / half_life_days) for age in ages_days]


def frequency(access_count: int) -> float:
    """Saturating use count: 1 at 99 accesses and above."""
    return frequencies((access_count,))[0]


def frequencies(access_counts: Iterable[int]) -> list[float]:
    """``frequency`` of each access count."""
    log1p, top = math.log1p, math.log(100)
    return [
        share if (share := log1p(n if n > 0 else 0) / top) < 1.0 else 1.0 for n in access_counts
    ]


def salience(access_count: int, days_since_access: float, half_life_days: float = 30.0) -> float:
    """Seed 003's decay: base 1 plus 0.1 per access, halving per half-life, never below 0.01."""
    return saliences((access_count,), (days_since_access,), half_life_days)[0]


def saliences(
    access_counts: Iterable[int], days_since_access: Iterable[float], half_life_days: float = 30.0
) -> list[float]:
    """``salience`` of each access count and the days since that access."""
    power, floor = math.pow, SALIENCE_FLOOR
    return [
        value
        if (
            value := (1.0 + 0.1 * (n if n > 0 else 0))
            * power(0.5, (days if days > 0.0 else 0.0) / half_life_days)
        )
        > floor
        else floor
        for n, days in zip(access_counts, days_since_access, strict=True)
    ]


def vehemence(urgency: float, sentiment: float, risk: float) -> float:
    """Seed 002's emotional weight, in [0, 1]."""
    return min(1.0, max(0.0, 0.5 * urgency + 0.3 * abs(sentiment) + 0.2 * risk))


def importance(value: float | None) -> float:
    """Importance in [0, 1]; unknown is 0.5."""
    return importances((value,))[0]


def importances(values: Iterable[float | None]) -> list[float]:
    """``importance`` of each value."""
    return [
        DEFAULT_IMPORTANCE if v is None else (c if (c := v if v > 0.0 else 0.0) < 1.0 else 1.0)
        for v in values
    ]


def resolve_weights(preset: str, custom: Mapping[str, float] | None = None) -> dict[str, float]:
    """Custom weights if given, else the preset's; unknown names or bad values are errors."""
    if custom is None:
        if preset not in PRESETS:
            raise ConfigurationError(f"unknown preset {preset!r}; use one of {sorted(PRESETS)}")
        custom = PRESETS[preset]
    unknown = sorted(set(custom) - set(WEIGHTS))
    if unknown:
        raise ConfigurationError(f"unknown weight(s) {unknown}; weights are {list(WEIGHTS)}")
    bad = {k: v for k, v in custom.items() if not (isinstance(v, int | float) and 0 <= v <= 10)}
    if bad or not any(custom.values()):
        raise ConfigurationError(f"weights must be numbers in [0, 10], not all 0: {dict(custom)}")
    return {name: float(custom.get(name, 0.0)) for name in WEIGHTS}


def parse_weights(text: str) -> dict[str, float]:
    """Parse ``semantic=0.6,recency=0.4`` (for the CLI); errors name the bad part."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = float(value) if sep else math.nan
        except ValueError:
            out[name.strip()] = math.nan
        if math.isnan(out[name.strip()]):
            raise ConfigurationError(f"cannot parse weight {part!r}; write name=number")
    return out


class Composer:
    """``composite`` with ``weights`` fixed, their sums computed once (ranking scores every
    candidate of a search with the same weights)."""

    def __init__(self, weights: Mapping[str, float]) -> None:
        self.rel_weight = sum(weights.get(name, 0.0) for name in RELEVANCE)
        self.other_weight = sum(weights.get(n, 0.0) for n in FACTORS if n not in RELEVANCE)
        # (name, weight) of each weighted factor, in FACTORS order: the order of the sums.
        self.rel = [(n, w) for n in RELEVANCE if (w := weights.get(n, 0.0))]
        self.other = [(n, w) for n in FACTORS if n not in RELEVANCE and (w := weights.get(n, 0.0))]

    def __call__(self, factors: Mapping[str, float]) -> float:
        return self.combine(
            [w * factors.get(n, 0.0) for n, w in self.rel],
            [w * factors.get(n, 0.0) for n, w in self.other],
        )

    def combine(self, relevance_terms: Sequence[float], boost_terms: Sequence[float]) -> float:
        """The score from each weighted factor times its weight, in ``rel`` and ``other``
        order (a caller that has the factors without a mapping saves building one)."""
        boost = sum(boost_terms)
        if self.rel_weight == 0:
            return boost / self.other_weight if self.other_weight else 0.0
        relevance = sum(relevance_terms) / self.rel_weight
        return relevance * (self.rel_weight + boost) / (self.rel_weight + self.other_weight)

    def relevance(self, columns: Sequence[Sequence[float]], count: int) -> list[float]:
        """The relevance ``combine`` computes, of each of ``count`` candidates at once (the
        same floats): ``columns`` holds each factor of ``rel``'s values, one per candidate
        (0 for every candidate without relevance weights)."""
        if self.rel_weight == 0:
            return [0.0] * count
        terms = [[w * v for v in column] for (_, w), column in zip(self.rel, columns, strict=True)]
        return [sum(parts) / self.rel_weight for parts in zip(*terms, strict=True)]

    def scores(self, relevance: Sequence[float], columns: Sequence[Sequence[float]]) -> list[float]:
        """``combine`` of each candidate at once (the same floats, a few Python calls per
        candidate instead of a dozen): its ``relevance`` and, in ``columns``, each factor of
        ``other``'s values."""
        terms = [[w * v for v in col] for (_, w), col in zip(self.other, columns, strict=True)]
        boosts = (
            [sum(parts) for parts in zip(*terms, strict=True)] if terms else [0] * len(relevance)
        )
        weight, other = self.rel_weight, self.other_weight
        if weight == 0:
            return [boost / other if other else 0.0 for boost in boosts]
        total = weight + other
        return [r * (weight + b) / total for r, b in zip(relevance, boosts, strict=True)]


def composite(factors: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Relevance, ordered among near-equals by the other factors as bounded boosts.

    relevance = the weighted mean of the relevance factors (semantic, dense, lexical);
    every other factor scales it:

        score = relevance * (W_rel + sum(w_f * f)) / (W_rel + W_other)

    so a score never exceeds its relevance, a memory with no relevance scores 0 however
    new or important, and the boosts reorder only memories within a bounded ratio of each
    other's relevance (at most (W_rel + W_other) / W_rel). Weights without any relevance
    factor (priming's ``importance`` and ``salience`` with no message) give the weighted
    mean of the others.
    """
    return Composer(weights)(factors)
