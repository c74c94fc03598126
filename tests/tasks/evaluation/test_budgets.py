"""Evidence within token budgets: answer and evidence recall of passages and whole memories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from storage.embedding import count_tokens
from tasks.evaluation import counted_once, read_answers, render_budgets, score_budgets
from tests.storage.retrieval.test_citations import hit

FILLER = "We also went over the garden, the car, the neighbours and the weather again. " * 10


def test_passages_keep_the_answer_where_whole_memories_no_longer_fit() -> None:
    episode = replace(
        hit(1, "episode", content=FILLER + "Booked: Wednesday 16:30.", session="s1"),
        passage="Booked: Wednesday 16:30.",
    )
    turn = hit(2, "turn", content="The plumber comes on Friday.", session="s2", messages=("m4",))
    runs = [("q1", ("s1:m9",), [episode]), ("q2", ("s2:m4",), [episode, turn])]

    report = score_budgets(runs, {"q1": "Wednesday 16:30"}, (90, 1000))

    small, large = report[90], report[1000]
    assert small["passages"].answer_recall == 1.0 and small["whole"].answer_recall == 0.0
    assert large["whole"].answer_recall == 1.0 and large["passages"].answered_of == 1
    assert small["passages"].evidence_recall == 0.5  # q2's turn fits beside the passage
    assert small["whole"].evidence_recall == 0.5  # the episode no longer does; the turn does
    assert small["passages"].mean_tokens < large["whole"].mean_tokens
    assert "answer: passages" in render_budgets(report)


def test_gold_answers_are_read_and_bad_lines_reported() -> None:
    text = (
        '{"question_id": "q1", "part": "p", "answer": "April 19th"}\n'
        '{"question_id": "q1", "part": "p", "answer": "again"}\n'
        '{"question_id": "q2", "part": "p"}\n'
    )

    answers, problems = read_answers("answers.jsonl", text)

    assert answers == {"q1": "April 19th"}
    assert [p.line for p in problems] == [2, 3]


def test_each_distinct_text_is_counted_once_and_its_count_recalled() -> None:
    asked: list[str] = []

    def count(texts: Sequence[str]) -> list[int]:
        asked.extend(texts)
        return count_tokens(texts)

    counted = counted_once(count)
    first = ["[Memory 1]", FILLER, "Sources:", "[Memory 1]"]
    again = ["Sources:", "naïve café, 来週の月曜日", FILLER, "[Memory 1]"]

    assert counted(first) == count_tokens(first) and counted(again) == count_tokens(again)
    assert sorted(asked) == sorted({*first, *again})  # each once, in whatever call came first
