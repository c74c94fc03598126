"""The tidy's selection rule as plain functions: caps, order, merging, stability."""

from __future__ import annotations

import random
import re
from datetime import UTC, date, datetime, timedelta

import pytest

from tasks.tidy import (
    Candidate,
    Caps,
    cut_utf8,
    document,
    header,
    measure,
    normalise,
    score,
    select,
    trace,
)

HEAD = header("alice", date(2026, 11, 16))
WORDS = ["trip", "Lisbon", "window", "seat", "dentist", "budget", "deploy", "ok", "TAP"]
ODD = ["😀", "👩‍👩‍👧", "東京", "日本語のテキスト", "ß", "é", "-->", "<!--", "\n", "  ", "#", "|"]


def ids_in(line: str) -> set[int]:
    """Every id a line's trace lists (ranges expanded)."""
    found = re.search(r"<!-- m:([0-9,\-]*)(?: \+\d+)? -->$", line)
    assert found, line
    out: set[int] = set()
    for part in found.group(1).split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def random_text(rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.1:
        return rng.choice(ODD) * rng.randint(500, 20_000)  # very long, multi-byte
    if shape < 0.2:
        return "".join(rng.choice(ODD) for _ in range(rng.randint(1, 60)))
    pool = WORDS + ODD + [f"w{rng.randint(0, 3000)}" for _ in range(8)]
    return " ".join(rng.choice(pool) for _ in range(rng.randint(1, 40)))


def random_candidates(rng: random.Random, n: int) -> list[Candidate]:
    ids = rng.sample(range(1, 10_000_000), n)
    return [
        Candidate(
            id=mid,
            kind=rng.choice(["fact", "preference", "decision", "goal", "note", "episode", "x"]),
            text=random_text(rng),
            score=rng.random(),
            pinned=rng.random() < 0.1,
            carried=rng.random() < 0.2,
        )
        for mid in ids
    ]


CAPS = [Caps(5, 256), Caps(7, 300), Caps(80, 5120), Caps(200, 20_000), Caps(10_000, 1000)]


@pytest.mark.parametrize("caps", CAPS, ids=lambda c: f"{c.max_lines}l-{c.max_bytes}b")
def test_caps_never_exceeded_on_adversarial_input(caps: Caps) -> None:
    rng = random.Random(20261122)
    filled = 0
    for round_ in range(9):
        n = 1000 if round_ % 4 == 0 else rng.randint(0, 120)
        cands = random_candidates(rng, n)
        entries = select(HEAD, cands, caps)
        if not entries:
            continue
        filled += 1
        text = document(HEAD, entries, caps)
        lines, size = measure(text)
        assert lines <= caps.max_lines and size <= caps.max_bytes
        text.encode("utf-8").decode("utf-8")  # whole characters only
        known = {c.id for c in cands}
        for entry in entries:
            assert "\n" not in entry.line and entry.line in text
            assert len(entry.line.encode()) <= caps.line_bytes
            assert ids_in(entry.line) <= set(entry.memory_ids) <= known
    assert filled >= 6


def test_large_caps_fill_many_lines_and_stop_before_the_cap() -> None:
    cands = [
        Candidate(i, "fact", f"fact number {i} about thing {i * 7}", 0.5) for i in range(1, 1001)
    ]
    caps = Caps(80, 5120)
    entries = select(HEAD, cands, caps)
    lines, size = measure(document(HEAD, entries, caps))
    assert len(entries) > 50
    assert lines <= 80 and size <= 5120
    assert lines == 80 or size > 5120 - 60  # stopped because the next line would not fit


def test_pinned_entries_come_first() -> None:
    cands = [
        Candidate(1, "preference", "Prefers tea over coffee", 0.9),
        Candidate(2, "fact", "Allergic to penicillin", 0.1, pinned=True),
        Candidate(3, "decision", "Books TAP flights", 0.8),
    ]
    entries = select(HEAD, cands, Caps(80, 5120))
    text = document(HEAD, entries, Caps(80, 5120))
    assert [e.memory_ids for e in entries] == [(2,), (1,), (3,)]
    body = text.splitlines()
    assert body[2] == "## Pinned" and body[3].startswith("- Allergic to penicillin")
    assert text.index("## Preferences") < text.index("## Decisions")


def test_near_duplicates_merge_citing_all_ids() -> None:
    cands = [
        Candidate(7, "preference", "Alice prefers window seats on long flights", 0.5),
        Candidate(3, "fact", "alice PREFERS window-seats, on long flights!", 0.4),
        Candidate(9, "episode", "Alice prefers window seats on long flights today", 0.7),
        Candidate(4, "fact", "Alice prefers aisle seats", 0.6),
    ]
    entries = select(HEAD, cands, Caps(80, 5120))
    merged = [e for e in entries if 7 in e.memory_ids]
    assert len(entries) == 2 and len(merged) == 1
    assert merged[0].memory_ids == (3, 7, 9)
    assert merged[0].text == "Alice prefers window seats on long flights"  # the preference
    assert merged[0].score == 0.7 and merged[0].line.endswith("<!-- m:3,7,9 -->")


def test_a_fact_told_in_two_sessions_is_one_line_without_either_context() -> None:
    porto = 'Alice prefers window seats. (in "Trip to Porto", 2026-11-27)'
    cands = [
        Candidate(5, "preference", porto, 0.5),
        Candidate(
            2, "preference", 'Alice prefers window seats. (in "Trip to Kyoto", 2026-11-24)', 0.4
        ),
        Candidate(
            8, "preference", 'Alice prefers aisle seats. (in "Trip to Kyoto", 2026-11-24)', 0.3
        ),
    ]
    entries = select(HEAD, cands, Caps(80, 5120))
    assert [(e.memory_ids, e.text) for e in entries] == [
        ((2, 5), "Alice prefers window seats."),  # says what both say, no one's context
        ((8,), 'Alice prefers aisle seats. (in "Trip to Kyoto", 2026-11-24)'),
    ]
    alone = select(HEAD, cands[:1], Caps(80, 5120))
    assert alone[0].text == porto and alone[0].key == entries[0].key  # a stable identity


def test_normalise_keeps_emoji_and_scripts() -> None:
    assert normalise("  Hello,   WORLD!! ") == "hello world"
    assert normalise("😀") == "😀" and normalise("東京、大阪。") == "東京 大阪"
    assert normalise("!!!") == "!!!"  # nothing but punctuation still has an identity


def test_long_line_cut_at_character_boundary() -> None:
    cands = [Candidate(1, "fact", "日本語" * 2000, 0.5), Candidate(2, "fact", "😀" * 5000, 0.4)]
    caps = Caps(80, 5120)
    entries = select(HEAD, cands, caps)
    assert len(entries) == 2
    for entry in entries:
        assert entry.text.endswith("…") and len(entry.line.encode()) <= caps.line_bytes
    assert cut_utf8("😀😀", 6) == "…" and cut_utf8("ab😀😀", 8) == "ab…"


def test_trace_lists_ranges_and_counts_the_rest() -> None:
    assert trace([5, 1, 2, 3, 9], 80) == "<!-- m:1-3,5,9 -->"
    many = trace(list(range(1, 2000, 2)), 40)
    assert len(many) <= 40 and many.endswith(" -->") and "+" in many


def test_ties_break_by_lowest_memory_id() -> None:
    cands = [Candidate(i, "fact", f"distinct fact {w}", 0.5) for i, w in [(9, "x"), (2, "y")]]
    entries = select(HEAD, cands, Caps(80, 5120))
    assert [e.memory_ids for e in entries] == [(2,), (9,)]


def test_selection_is_a_fixed_point_of_a_rerun() -> None:
    rng = random.Random(7)
    caps = Caps(12, 900)
    for _ in range(20):
        cands = random_candidates(rng, 200)
        first = select(HEAD, cands, caps)
        chosen = {m for e in first for m in e.memory_ids}
        survivors = [c for c in cands if not c.carried or c.id in chosen]
        assert select(HEAD, survivors, caps) == first


def test_score_weights_importance_salience_recency() -> None:
    now = datetime(2026, 11, 22, 22, tzinfo=UTC)
    fresh = score(1.0, 0, None, now, now)
    assert fresh == pytest.approx(1.0)
    month_old = score(0.5, 0, None, now - timedelta(days=30), now)
    assert month_old == pytest.approx(0.4 * 0.5 + 0.3 * 0.5 + 0.3 * 0.5)
    used = score(0.5, 50, now, now - timedelta(days=30), now)
    assert used == pytest.approx(0.4 * 0.5 + 0.3 * 1.0 + 0.3 * 0.5)  # salience capped at 1


APART = {
    "airline": ("Let's go with the TAP one on Friday.", "Let's go with the Iberia one on Friday."),
    "place": (
        "user: I need to book flights to Copenhagen for the conference in March.",
        "user: I need to book flights to Porto for the conference in March.",
    ),
    "number": (
        "The weekly team meeting is moved to Thursday at 3pm",
        "The weekly team meeting is moved to Thursday at 5pm",
    ),
    "date": (
        "Dentist appointment moved to 12 March at the clinic on the corner",
        "Dentist appointment moved to 14 March at the clinic on the corner",
    ),
    "weekday": (
        "the billing deploy is on friday night for the whole team",
        "the billing deploy is on monday night for the whole team",
    ),
    "number word": (
        "book a table for three people at the italian place near the office",
        "book a table for four people at the italian place near the office",
    ),
    "negation": (
        "Alice will sit in window seats on long flights to work",
        "Alice will never sit in window seats on long flights to work",
    ),
    "quoted": (
        'the wifi password at the office is "sunflower" since the move',
        'the wifi password at the office is "sunrise" since the move',
    ),
    "order": (
        "the train from Lisbon to Porto leaves early in the morning",
        "the train from Porto to Lisbon leaves early in the morning",
    ),
    "after an abbreviation": (
        "appointment with Dr. Smith about the knee at the usual clinic",
        "appointment with Dr. Jones about the knee at the usual clinic",
    ),
}


@pytest.mark.parametrize("texts", APART.values(), ids=APART.keys())
def test_facts_that_differ_in_a_decisive_word_stay_apart(texts: tuple[str, str]) -> None:
    cands = [Candidate(1, "decision", texts[0], 0.5), Candidate(2, "decision", texts[1], 0.5)]
    entries = select(HEAD, cands, Caps(80, 5120))
    assert sorted((e.text, e.memory_ids) for e in entries) == sorted(
        [(texts[0], (1,)), (texts[1], (2,))]
    )


SAME = {
    "extra word": (
        "Alice prefers window seats on long flights",
        "Alice prefers window seats on long flights today",
    ),
    "decisive words agree": (
        "The team meeting is on Thursday at 3pm in Room 4",
        "the team meeting is on thursday at 3pm in room 4 again",
    ),
    "case of a plain word": (
        "user: Let's go with the TAP one on Friday morning",
        "user: let's GO with the TAP one on Friday morning then",
    ),
}


@pytest.mark.parametrize("texts", SAME.values(), ids=SAME.keys())
def test_two_wordings_of_the_same_fact_still_merge(texts: tuple[str, str]) -> None:
    cands = [Candidate(1, "fact", texts[0], 0.5), Candidate(2, "fact", texts[1], 0.4)]
    entries = select(HEAD, cands, Caps(80, 5120))
    assert [(e.text, e.memory_ids) for e in entries] == [(texts[0], (1, 2))]


def test_no_chain_of_small_differences_joins_two_that_differ() -> None:
    base = "alice books window seats on long flights abroad"  # 8 words, 80 % of 10
    cands = [
        Candidate(1, "fact", base + " with legroom", 0.5),
        Candidate(2, "fact", base, 0.5),
        Candidate(3, "fact", base + " company paid", 0.5),  # 8 of 12 words of the first
    ]
    entries = select(HEAD, cands, Caps(80, 5120))
    assert sorted(e.memory_ids for e in entries) == [(1, 2), (3,)]
