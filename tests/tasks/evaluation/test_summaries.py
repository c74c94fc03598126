"""Summary metrics: ROUGE-1, fact coverage, the first-turns baseline, the gold reader."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from storage.embedding import HashingEmbedder
from storage.kernel.records import MessageRecord, SessionRecord
from tasks.evaluation import covered, first_turns, pieces, read_gold, rouge1, score_summaries, words
from tasks.sync import Transcript

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _transcript(sid: str, *turns: tuple[str, str]) -> Transcript:
    messages = tuple(
        MessageRecord(
            id=f"m{i}",
            role="user" if speaker != "aria" else "assistant",
            speaker=speaker,
            content=text,
            timestamp=T0 + timedelta(minutes=i),
        )
        for i, (speaker, text) in enumerate(turns, start=1)
    )
    return Transcript("test", SessionRecord(id=sid, namespace="alice", agent="aria"), messages)


def test_rouge1_counts_clipped_unigram_overlap_both_ways() -> None:
    recall, precision = rouge1("the cat sat on the mat", "The cat was on the mat today")
    # overlap: the x2, cat, on, mat = 5 of 7 reference and of 6 candidate words
    assert recall == pytest.approx(5 / 7)
    assert precision == pytest.approx(5 / 6)
    assert rouge1("", "anything") == (0.0, 0.0)


def test_cjk_characters_are_words_of_their_own() -> None:
    assert words("東京に行く, Tokyo!") == ["東", "京", "に", "行", "く", "tokyo"]
    assert rouge1("東京", "東京駅")[0] == pytest.approx(2 / 3)


def test_pieces_split_sentences_bullets_and_lines() -> None:
    text = "Mara booked Leipzig. Race is 19 April!\n• shoes: 700 km • 3.5 km warm-up。次"
    assert pieces(text) == [
        "Mara booked Leipzig.",
        "Race is 19 April!",
        "shoes: 700 km",
        "3.5 km warm-up。",
        "次",
    ]


def test_first_turns_are_cut_at_a_word_to_the_length_given() -> None:
    t = _transcript("s1", ("Mara", "I signed up for the half marathon."), ("aria", "Great news."))
    assert first_turns(t, 1000) == "Mara: I signed up for the half marathon. aria: Great news."
    cut = first_turns(t, 30)
    assert len(cut) <= 30 and cut == "Mara: I signed up for the"


def test_a_fact_is_covered_only_by_a_close_enough_sentence() -> None:
    embedder = HashingEmbedder()
    facts = ["Mara signed up for the Leipzig half marathon.", "Biscuit dislikes grapes."]
    texts = ["Mara signed up for the Leipzig half marathon.", "Unrelated words entirely here."]
    assert covered(facts, texts, embedder) == [True, False]
    assert covered(facts, [], embedder) == [False, False]


def test_scores_per_language_and_overall_with_missing_sessions_listed() -> None:
    embedder = HashingEmbedder()
    gold_lines = [
        {
            "session_id": "s1",
            "language": "en",
            "summary": "Mara signed up for the Leipzig half marathon on April 19th.",
            "facts": ["Mara signed up for the Leipzig half marathon.", "The race is in April."],
        },
        {"session_id": "gone", "language": "de", "summary": "x", "facts": ["y"]},
    ]
    gold, problems = read_gold("gold.jsonl", "\n".join(json.dumps(g) for g in gold_lines))
    assert problems == []
    t = _transcript("s1", ("aria", "Hello! How can I help today?"), ("Mara", "Small talk first."))
    produced = {"s1": ("Mara signed up for the Leipzig half marathon.", ["The race is in April."])}

    groups = score_summaries(gold, [t], produced, embedder)

    overall = groups["overall"]
    assert list(groups) == ["en", "overall"] and overall.missing == ("gone",)
    assert overall.sessions == 1 and overall.facts == 2
    assert overall.coverage_summary == 0.5 and overall.coverage_facts == 0.5
    assert overall.coverage_baseline == 0.0
    assert overall.rouge_recall > overall.baseline_recall
    assert overall.mean_chars == len(produced["s1"][0])


def test_bad_and_repeated_gold_lines_are_reported() -> None:
    good = json.dumps({"session_id": "s1", "summary": "a", "facts": ["b"]})
    text = "\n".join([good, "{oops", json.dumps({"session_id": "s2", "summary": "a"}), good])
    gold, problems = read_gold("g.jsonl", text)
    assert [g.session_id for g in gold] == ["s1"]
    assert [p.line for p in problems] == [2, 3, 4]
    assert "repeated session 's1'" in str(problems[2])
