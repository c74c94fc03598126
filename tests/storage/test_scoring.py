"""The ranking math, on its edge cases."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from storage.kernel import scoring
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import Settings


def test_recency_is_a_true_half_life() -> None:
    assert scoring.recency(0) == 1.0
    assert scoring.recency(30) == pytest.approx(0.5)
    assert scoring.recency(60) == pytest.approx(0.25)
    assert scoring.recency(-5) == 1.0  # a clock a bit ahead is "now", not "better than now"
    assert scoring.recency(30) != pytest.approx(math.exp(-30 / 30))  # the seeds' curve differs


def test_salience_decays_boosts_and_never_vanishes() -> None:
    assert scoring.salience(0, 0) == 1.0
    assert scoring.salience(0, 30) == pytest.approx(0.5)
    assert scoring.salience(5, 0) == pytest.approx(1.5)  # +0.1 per access
    assert scoring.salience(0, 10_000) == 0.01  # the floor


def test_frequency_saturates_at_one() -> None:
    assert scoring.frequency(0) == 0.0
    assert scoring.frequency(99) == pytest.approx(1.0)
    assert scoring.frequency(10_000) == 1.0
    assert 0 < scoring.frequency(3) < scoring.frequency(10) < 1


def test_importance_defaults_and_vehemence_formula() -> None:
    assert scoring.importance(None) == 0.5
    assert scoring.importance(1.7) == 1.0
    assert scoring.vehemence(1.0, -1.0, 1.0) == pytest.approx(1.0)
    assert scoring.vehemence(0.4, -0.5, 0.5) == pytest.approx(0.2 + 0.15 + 0.1)


def test_presets_and_custom_weights() -> None:
    archivist = scoring.resolve_weights("archivist")
    assert {name: w for name, w in archivist.items() if w} == {
        "semantic": 1.0,
        "importance": 0.05,
        "window": 0.5,
        "supersede": 0.3,
        "context": 0.7,
        "session": 0.7,
    }
    assert set(archivist) == set(scoring.FACTORS) | {"supersede", "context", "session"}
    librarian = scoring.resolve_weights("librarian")
    assert sum(librarian.values()) == pytest.approx(1.0) and librarian["vehemence"] == 0.15
    custom = scoring.resolve_weights("archivist", {"semantic": 0.7, "lexical": 0.3})
    assert custom["recency"] == 0.0 and custom["lexical"] == 0.3
    for bad in ({"typo": 1.0}, {"semantic": -1.0}, {"semantic": 0.0}):
        with pytest.raises(ConfigurationError):
            scoring.resolve_weights("archivist", bad)
    with pytest.raises(ConfigurationError, match="unknown preset"):
        scoring.resolve_weights("nope")


def test_parse_weights() -> None:
    assert scoring.parse_weights("semantic=0.7, recency=0.3") == {"semantic": 0.7, "recency": 0.3}
    for bad in ("semantic", "semantic=abc", "semantic=nan"):
        with pytest.raises(ConfigurationError, match="cannot parse"):
            scoring.parse_weights(bad)


def test_composite_is_relevance_scaled_by_bounded_boosts() -> None:
    factors = {"semantic": 0.5, "recency": 1.0, "importance": 0.25, "frequency": 0.9}
    weights = scoring.resolve_weights(
        "custom", {"semantic": 0.6, "recency": 0.25, "importance": 0.15}
    )
    boosts = (weights["semantic"] + weights["recency"] * 1.0 + weights["importance"] * 0.25) / (
        weights["semantic"] + weights["recency"] + weights["importance"]
    )
    assert scoring.composite(factors, weights) == pytest.approx(0.5 * boosts)
    # The default's window is a boost like the others; supersede is a rule, not a factor.
    default = scoring.resolve_weights("archivist")
    inside = {**factors, "window": 1.0}
    assert scoring.composite(inside, default) == pytest.approx(0.5 * (1.5 + 0.0125) / 1.55)
    assert scoring.composite({**factors, "window": 0.0}, default) == pytest.approx(
        0.5 * 1.0125 / 1.55
    )
    # Never above relevance, nothing without it, and relevance alone when only it is weighted.
    best = {**factors, "importance": 1.0}
    assert scoring.composite(best, weights) == pytest.approx(0.5)
    assert scoring.composite({**factors, "semantic": 0.0}, weights) == 0.0
    only = scoring.resolve_weights("custom", {"semantic": 1.0})
    assert scoring.composite(factors, only) == pytest.approx(0.5)
    # The lexical and dense parts can be weighted on their own: their weighted mean.
    parts = scoring.resolve_weights("custom", {"dense": 3.0, "lexical": 1.0, "recency": 1.0})
    mixed = {"dense": 0.8, "lexical": 0.4, "recency": 0.5}
    assert scoring.composite(mixed, parts) == pytest.approx(0.7 * (4.0 + 0.5) / 5.0)
    # No relevance weighted at all (priming with no message): the others' weighted mean.
    plain = scoring.resolve_weights("custom", {"importance": 1.0, "salience": 3.0})
    assert scoring.composite({"importance": 0.4, "salience": 0.8}, plain) == pytest.approx(0.7)


def test_many_candidates_score_as_each_one_does_to_the_last_bit() -> None:
    rng = random.Random(3)
    factors = [
        {n: rng.choice([0.0, rng.random(), 1.0]) for n in scoring.FACTORS} for _ in range(300)
    ]
    presets = [scoring.resolve_weights(p) for p in scoring.PRESETS]
    for weights in [
        *presets,
        {"semantic": 0.7, "dense": 0.2, "lexical": 0.3, "recency": 0.3, "salience": 0.2},
        {"importance": 1.0, "salience": 3.0},  # no relevance weighted
        {"semantic": 1.0},  # no boost
    ]:
        composer = scoring.Composer(weights)
        columns = {n: [f[n] for f in factors] for n in scoring.FACTORS}
        relevance = composer.relevance([columns[n] for n, _ in composer.rel], len(factors))
        scores = composer.scores(relevance, [columns[n] for n, _ in composer.other])
        assert [s.hex() for s in scores] == [composer(f).hex() for f in factors], weights


def test_each_factor_of_many_values_is_the_formula_of_one_to_the_last_bit() -> None:
    # The formulas as min and max write them: the forms for many values write them out.
    def recency(age: float, half_life: float) -> float:
        return math.pow(0.5, max(0.0, age) / half_life)

    def frequency(n: int) -> float:
        return min(1.0, math.log1p(max(0, n)) / math.log(100))

    def salience(n: int, days: float, half_life: float) -> float:
        return max(0.01, (1.0 + 0.1 * max(0, n)) * math.pow(0.5, max(0.0, days) / half_life))

    def importance(value: float | None) -> float:
        return 0.5 if value is None else min(1.0, max(0.0, value))

    rng = random.Random(5)
    edges = [0.0, -0.0, 1.0, -1.0, 1e-300, math.inf, -math.inf, math.nextafter(1.0, 2.0)]
    floats = edges + [rng.uniform(-5.0, 400.0) for _ in range(2000)]
    counts = [0, 1, 99, 100, -1, 10**6] + [rng.randint(0, 500) for _ in range(500)]
    days = [rng.choice(floats[1:-1]) for _ in counts]
    values = [*floats, math.nan, None, 0, 2]
    finite = [x for x in floats if math.isfinite(x)]
    for half_life in (30.0, 7.5):
        assert scoring.recencies(finite, half_life) == [recency(a, half_life) for a in finite]
        assert scoring.saliences(counts, days, half_life) == [
            salience(n, d, half_life) for n, d in zip(counts, days, strict=True)
        ]
    assert scoring.frequencies(counts) == [frequency(n) for n in counts]
    assert [repr(v) for v in scoring.importances(values)] == [repr(importance(v)) for v in values]
    assert repr(scoring.importance(-0.0)) == "0.0" and scoring.recency(-0.0) == 1.0


def test_policy_file_sets_weights_and_a_missing_one_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[retrieval]\npreset = "librarian"\nweights = { semantic = 0.9, recency = 0.1 }\n'
    )
    monkeypatch.setenv("ARCHIVIST_POLICY_FILE", str(policy))
    settings = Settings()
    assert settings.retrieval.preset == "librarian"
    assert scoring.resolve_weights("librarian", settings.retrieval.weights)["semantic"] == 0.9
    monkeypatch.setenv("ARCHIVIST_POLICY_FILE", str(policy) + ".missing")
    with pytest.raises(ConfigurationError, match="not a readable file"):
        Settings()
