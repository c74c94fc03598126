"""One place per source: chunks of a message, a fact and its turn, a long-term entry
and its facts; the weights a question uses, and newer restatements first."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from storage.kernel import scoring
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Hit, read_time
from storage.retrieval.rank import (
    after_newer,
    one_per_source,
    rank,
    relevance_parts,
    restatements,
    weights_for,
)

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def hit(
    memory_id: int, kind: str, session: str | None, *messages: str, sources: tuple[int, ...] = ()
) -> Hit:
    return Hit(
        memory_id=memory_id,
        namespace="alice",
        kind=kind,
        content=f"memory {memory_id}",
        score=1.0 / memory_id,
        factors={},
        weights={},
        occurred_at=T0,
        created_at=T0,
        session_id=session,
        message_ids=messages,
        tier="fresh",
        sources=sources,
    )


def test_a_hit_whose_messages_a_better_hit_cites_gives_way() -> None:
    ranked = [
        hit(1, "turn", "s1", "m0"),  # best chunk of s1:m0
        hit(2, "fact", "s1", "m0"),  # a fact from the same message: nothing new
        hit(3, "turn", "s1", "m0"),  # another chunk of s1:m0
        hit(4, "turn", "s2", "m0"),  # same message id, other session
        hit(5, "fact", "s1", "m1", "m2"),
        hit(6, "turn", "s1", "m1"),  # within the fact's messages
        hit(7, "turn", None, "m0"),  # no session: nothing to group by
        hit(8, "turn", None, "m0"),
        hit(9, "episode", "s1", "m0", "m1"),  # a session summary stands on its own
        hit(10, "turn", "s1", "m3"),
    ]

    assert [h.memory_id for h in one_per_source(ranked)] == [1, 4, 5, 7, 8, 9, 10]


def test_a_long_term_entry_and_its_facts_fill_one_place_whichever_ranks_first() -> None:
    entry_first = [hit(1, "long_term", None, sources=(5, 6)), hit(5, "fact", "s1", "m0")]
    fact_first = [hit(5, "fact", "s1", "m0"), hit(1, "long_term", None, sources=(5, 6))]
    other = [hit(1, "long_term", None, sources=(5, 6)), hit(7, "fact", "s1", "m1")]

    assert [h.memory_id for h in one_per_source(entry_first)] == [1]
    assert [h.memory_id for h in one_per_source(fact_first)] == [5]
    assert [h.memory_id for h in one_per_source(other)] == [1, 7]


def test_relevance_parts_are_shares_of_the_best_candidate() -> None:
    rows = [SimpleNamespace(cosine=c, bm25=b) for c, b in [(0.5, 0.0), (0.25, 4.0), (-0.1, 2.0)]]

    dense, lexical = relevance_parts(rows)

    assert dense == [1.0, 0.5, 0.0] and lexical == [0.0, 1.0, 0.5]
    # A weaker pool keeps its proportions: nothing is stretched to fill [0, 1].
    weak = [SimpleNamespace(cosine=c, bm25=0.0) for c in (0.2, 0.19)]
    assert relevance_parts(weak) == ([1.0, pytest.approx(0.95)], [0.0, 0.0])
    assert relevance_parts([]) == ([], [])
    # A best candidate under the relevance floor is a share of the floor, not of itself.
    assert relevance_parts(weak, 0.4)[0] == [pytest.approx(0.5), pytest.approx(0.475)]


def candidate(id_: int, days: int, session: str | None = "s", kind: str = "fact") -> Any:
    return SimpleNamespace(
        id=id_, kind=kind, session_id=session, occurred_at=T0 + timedelta(days=days)
    )


def test_only_what_a_question_asks_of_time_is_weighed() -> None:
    preset = scoring.resolve_weights("archivist")
    as_of = datetime(2026, 11, 20, 12, tzinfo=UTC)

    plain = weights_for(preset, read_time("where is the VPN token?", as_of, UTC))
    dated = weights_for(preset, read_time("what did we say last week?", as_of, UTC))
    now = weights_for(preset, read_time("which gym do I go to now?", as_of, UTC))

    assert plain["window"] == plain["supersede"] == 0 and plain["semantic"] == 1
    assert dated["window"] == 0.5 and dated["supersede"] == 0
    assert now["window"] == 0 and now["supersede"] == 0.3
    assert plain["importance"] == dated["importance"] == now["importance"] == 0.05


def test_an_older_memory_goes_right_after_the_newer_ones_restating_it() -> None:
    rows = [candidate(1, 0), candidate(2, 10), candidate(3, 20), candidate(4, 30)]
    scores = [0.9, 0.8, 0.5, 0.7]
    restated = np.zeros((4, 4), dtype=bool)
    restated[0, 1] = restated[0, 2] = True  # 2 and 3 restate 1
    restated[3, 0] = True  # never set by restatements (1 is older than 4): moves nothing up

    # 3 is too much less relevant for a reach of 0.3: 1 goes right after 2 alone.
    final, after = after_newer(rows, scores, scores, restated, reach=0.3)
    assert final[0] == pytest.approx(0.8) and final[0] < 0.8 and after == [2, None, None, None]
    assert final[1:] == scores[1:]
    # With a reach of 0.5, after 3 as well: below both, above nothing else.
    final, after = after_newer(rows, scores, scores, restated, reach=0.5)
    assert 0.4 < final[0] < 0.5 and after[0] == 3
    # An older memory already below its restatement keeps its score.
    final, after = after_newer(rows, scores, [0.1, 0.8, 0.5, 0.7], restated, reach=0.3)
    assert final[0] == 0.1 and after[0] is None
    assert after_newer([], [], [], np.zeros((0, 0), dtype=bool), 0.3) == ([], [])


def test_restatements_are_close_newer_and_of_another_session() -> None:
    rng = np.random.default_rng(3)
    topic, other = rng.normal(size=384), rng.normal(size=384)
    near = [topic + rng.normal(size=384) * 0.3 for _ in range(4)]
    rows = [
        candidate(1, 0, "s1"),
        candidate(2, 5, "s2"),  # newer, close, another session: restates 1
        candidate(3, 6, "s2"),  # close, but a session that 2 is also of
        candidate(4, 9, "s1"),  # same session as 1
        candidate(5, 12, "s3", kind="task_card"),  # a task card takes no part
        candidate(6, 15, "s4"),  # far
    ]
    vectors = {r.id: v.astype(">f4") for r, v in zip(rows, [*near, topic, other], strict=True)}

    restated = restatements(rows, vectors)

    assert {(int(i) + 1, int(j) + 1) for i, j in zip(*np.nonzero(restated), strict=True)} == {
        (1, 2), (1, 3), (2, 4), (3, 4),
    }  # fmt: skip
    assert not restatements(rows, {}).any()


def test_a_newer_session_summary_restates_an_older_one_of_the_same_plan() -> None:
    # "when is the dentist?": the session that booked it restates the one that asked for it.
    rng = np.random.default_rng(5)
    topic = rng.normal(size=384)
    rows = [candidate(1, 0, "s1", kind="episode"), candidate(2, 8, "s2", kind="episode")]
    vectors = {r.id: (topic + rng.normal(size=384) * 0.3).astype(">f4") for r in rows}

    restated = restatements(rows, vectors)

    assert {(int(i) + 1, int(j) + 1) for i, j in zip(*np.nonzero(restated), strict=True)} == {
        (1, 2)
    }


def row(id_: int, occurred_at: datetime, cosine: float) -> Any:
    """A memory candidate as the candidates statement returns it."""
    return SimpleNamespace(
        id=id_,
        namespace="alice",
        kind="fact",
        content=f"memory {id_}",
        importance=0.5,
        vehemence=0.0,
        access_count=0,
        last_accessed_at=None,
        occurred_at=occurred_at,
        created_at=occurred_at,
        session_id=None,
        message_ids=[],
        tier="fresh",
        cosine=cosine,
        bm25=0.0,
    )


def test_equal_scores_rank_the_newer_first_then_the_lower_id() -> None:
    # The same instant in another zone is a tie, broken by the lower id.
    later = (T0 + timedelta(days=1)).astimezone(timezone(timedelta(hours=-5)))
    rows = [
        row(4, T0, 0.5),
        row(2, T0 + timedelta(days=1), 0.5),
        row(3, T0, 0.9),
        row(1, T0, 0.5),
        row(5, later, 0.5),
    ]
    weights = scoring.resolve_weights("archivist")
    when = read_time("where is the VPN token?", T0 + timedelta(days=2), UTC)

    hits = rank(rows, when, weights, RetrievalSettings())

    assert [h.memory_id for h in hits] == [3, 2, 5, 1, 4]
    assert hits[1].score == hits[2].score == hits[3].score == hits[4].score


def test_a_changed_hit_is_what_replace_makes() -> None:
    original = hit(7, "fact", "s1", "m0", sources=(3,))

    changed = original.changed(passage="the part", score=0.25)

    assert changed == replace(original, passage="the part", score=0.25)
    assert (changed.passage, changed.score, original.passage, original.score) == (
        "the part",
        0.25,
        "",
        1 / 7,
    )
    with pytest.raises(TypeError, match="no field"):
        original.changed(pasage="a typo")


def test_a_hit_made_without_init_is_the_hit_init_makes() -> None:
    made = hit(7, "fact", "s1", "m0", sources=(3,))
    values = dict(made.__dict__)

    again = Hit.from_dict(dict(values))

    assert again == made and list(again.__dict__) == list(made.__dict__)
    with pytest.raises(TypeError, match="passage"):
        Hit.from_dict({k: v for k, v in values.items() if k != "passage"})
    with pytest.raises(TypeError, match="pasage"):
        Hit.from_dict(values | {"pasage": "a typo"})
