"""One place per source: chunks of a message, a fact and its turn, a long-term entry
and its facts."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from storage.retrieval import Hit, one_per_source, relevance_parts

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
