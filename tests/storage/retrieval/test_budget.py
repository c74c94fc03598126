"""Context within a token budget: the best passages that fit, each once, counted exactly."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage.embedding import count_tokens
from storage.kernel.errors import RetrievalError
from storage.retrieval import render_citations
from storage.retrieval.explain import fit
from tests.storage.retrieval.test_citations import hit

LONG = "The nightly billing backup copied every volume to the eastern site. " * 12


def _hits() -> list:
    return [
        replace(
            hit(1, "episode", content=LONG + "Booked: Wednesday 16:30."),
            passage="Booked: Wednesday 16:30.",
        ),
        hit(2, content="Alice prefers window seats."),
        hit(3, content="Alice prefers window seats."),  # the same again: left out
        hit(4, content=LONG),
        hit(5, content="Lena might join the trip."),
    ]


def test_passages_fit_the_budget_each_once_and_the_count_is_the_texts() -> None:
    context = fit(_hits(), 120)

    assert [h.memory_id for h in context.hits] == [1, 2, 5]
    assert context.tokens_used == count_tokens([context.text])[0] <= 120
    assert context.text == render_citations(context.citations)
    assert context.citations[2].label == "[Memory 3]" and context.left_out == 2


def test_whole_memories_take_more_of_the_same_budget() -> None:
    whole = fit(_hits(), 120, whole=True)

    assert [h.memory_id for h in whole.hits] == [2, 5]  # the first memory no longer fits
    assert whole.tokens_used <= 120
    assert fit(_hits(), 1000, whole=True).hits[0].shown.startswith("The nightly")


def test_a_budget_too_small_for_anything_gives_no_text() -> None:
    context = fit(_hits(), 5)

    assert context.citations == () and context.tokens_used == 0 and context.text == ""


@pytest.mark.parametrize("budget", [0, -1, 100_001, True, "500", 5.0])
def test_a_bad_budget_is_a_clear_error(budget: object) -> None:
    with pytest.raises(RetrievalError, match="token budget must be"):
        fit(_hits(), budget)  # type: ignore[arg-type]
