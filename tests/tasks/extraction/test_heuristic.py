"""Behaviour of the offline heuristic extractor on small hand-written sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage.kernel.records import MessageRecord, SessionKind, SessionRecord, SessionState
from tasks.extraction import Extraction, HeuristicExtractor

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _state(turns: list[tuple[str, str, str]], kind: SessionKind = "direct") -> SessionState:
    """A session from (role, speaker, content) triples, one minute apart, ids m0, m1, ..."""
    messages = tuple(
        MessageRecord(
            id=f"m{i}",
            role=role,
            speaker=speaker,
            content=content,
            timestamp=T0 + timedelta(minutes=i),
        )
        for i, (role, speaker, content) in enumerate(turns)
    )
    session = SessionRecord(id="s1", namespace="alice", agent="aria", kind=kind)
    return SessionState(session=session, messages=messages, fingerprint="f")


def _extract(turns: list[tuple[str, str, str]], kind: SessionKind = "direct") -> Extraction:
    return HeuristicExtractor().extract(_state(turns, kind))


def _floats(result: Extraction) -> list[float]:
    episode = result.episode
    scores = [episode.importance, episode.vehemence, episode.urgency, episode.risk]
    return scores + [v for m in result.memories for v in (m.importance, m.vehemence)]


def test_name_is_versioned() -> None:
    assert HeuristicExtractor().name == "heuristic-v1"


def test_decision_becomes_outcome_and_decision_memory() -> None:
    result = _extract(
        [
            ("user", "Alice", "Which database should the memory store use?"),
            ("assistant", "aria", "Both work. We decided to use Postgres with pgvector."),
        ]
    )
    decisions = [o for o in result.episode.outcomes if o.type == "decision"]
    assert [o.message_ids for o in decisions] == [("m1",)]
    assert "Postgres" in decisions[0].content
    kinds = {(m.kind, m.message_ids) for m in result.memories}
    assert ("decision", ("m1",)) in kinds
    summary = result.episode.summary
    assert "Aria: We decided to use Postgres with pgvector." in summary
    assert summary.count("Postgres") == 1  # stated once: not again as an open thread


def test_a_decision_is_labelled_when_its_sentence_does_not_say_so() -> None:
    result = _extract(
        [
            ("assistant", "aria", "KLM leaves at 09:40 and easyJet at 06:55, both on Friday."),
            ("user", "Alice", "Let's go with the KLM one on Friday."),
        ]
    )
    assert "Alice decided: Let's go with the KLM one on Friday." in result.episode.summary


def test_unanswered_question_is_open_thread() -> None:
    result = _extract(
        [
            ("user", "Alice", "Thanks for the summary of the budget review."),
            ("assistant", "aria", "You are welcome."),
            ("user", "Alice", "Can you check whether the invoice was paid?"),
        ]
    )
    threads = result.episode.open_threads
    assert [(t.status, t.message_ids) for t in threads] == [("unanswered_question", ("m2",))]
    assert threads[0].topic == "invoice"


def test_answered_question_is_not_open_thread() -> None:
    result = _extract(
        [
            ("user", "Alice", "Can you check whether the invoice was paid?"),
            ("assistant", "aria", "Yes, it was paid on Monday."),
        ]
    )
    assert result.episode.open_threads == ()


def test_question_answered_by_another_participant_is_not_open() -> None:
    result = _extract(
        [
            ("user", "Alice", "Who books the venue for the offsite?"),
            ("user", "Bob", "Carol books it, as every year."),
        ]
    )
    assert result.episode.open_threads == ()


def test_promises_and_follow_ups_become_open_threads() -> None:
    result = _extract(
        [
            ("user", "Alice", "The quarterly report is due soon."),
            ("assistant", "aria", "I'll draft the quarterly report tonight."),
            ("user", "Alice", "Remind me about the dentist appointment next week."),
        ]
    )
    statuses = {t.status: t.message_ids for t in result.episode.open_threads}
    assert statuses == {"promised": ("m1",), "follow_up": ("m2",)}


def test_entities_include_names_urls_and_participants() -> None:
    result = _extract(
        [
            ("user", "Alice", "Yesterday I met Bob Miller in Berlin about the launch."),
            ("assistant", "aria", "Here is the plan: https://example.com/launch-plan."),
        ]
    )
    entities = result.episode.entities
    assert entities[0] == "Alice"
    assert {"Bob Miller", "Berlin", "https://example.com/launch-plan"} <= set(entities)
    assert "Yesterday" not in entities  # a sentence opener is not a name
    assert "aria" in entities and "assistant" not in entities


def test_topics_come_from_repeated_words() -> None:
    result = _extract(
        [
            ("user", "Alice", "The garden needs work: the tomatoes and the garden hose."),
            ("assistant", "aria", "Water the tomatoes early; the garden soil dries fast."),
            ("user", "Alice", "Good idea, the tomatoes look thirsty. More tomatoes soon."),
        ]
    )
    assert result.episode.topics[:2] == ("tomatoes", "garden")
    assert result.episode.user_state["focus"] == "tomatoes"
    assert "the" not in result.episode.topics


def test_scores_are_in_range_and_urgency_raises_vehemence() -> None:
    urgent = _extract(
        [
            (
                "user",
                "Alice",
                "URGENT: we have a security breach and passwords leaked! "
                "I need help immediately, the lawyer calls at noon!",
            ),
            ("assistant", "aria", "Rotate the credentials now."),
        ]
    )
    calm = _extract(
        [
            ("user", "Alice", "Could you suggest a recipe for a vegetable soup?"),
            ("assistant", "aria", "Try leeks, potatoes and a little thyme."),
        ]
    )
    for result in (urgent, calm):
        assert all(0.0 <= value <= 1.0 for value in _floats(result))
        assert -1.0 <= result.episode.sentiment <= 1.0
        assert all(round(v, 4) == v for v in _floats(result))
    assert urgent.episode.vehemence > calm.episode.vehemence + 0.3
    assert urgent.episode.urgency > calm.episode.urgency
    assert urgent.episode.risk > calm.episode.risk
    assert urgent.episode.importance > calm.episode.importance


def test_user_state_reads_the_users_mood() -> None:
    result = _extract(
        [
            ("user", "Alice", "I'm so stressed and overwhelmed by the deadline."),
            ("assistant", "aria", "That sounds hard. Let's split the work into steps."),
        ]
    )
    assert result.episode.user_state["mood"] == "stressed"
    assert result.episode.sentiment < 0


def test_same_input_gives_identical_output() -> None:
    turns = [
        ("user", "Alice", "I prefer tea over coffee. Should we meet Tom in Paris?"),
        ("assistant", "aria", "Let's go with Thursday. I'll book https://example.com/x."),
    ]
    assert _extract(turns) == _extract(turns)
    assert HeuristicExtractor().extract(_state(turns)) == HeuristicExtractor().extract(
        _state(turns)
    )


def test_turn_memories_link_to_exactly_their_message() -> None:
    result = _extract(
        [
            ("system", "system", "You are a helpful assistant for household planning."),
            ("user", "Alice", "Please plan meals for the week ahead."),
            ("tool", "search", "Found 12 recipes matching 'weekly meal plan' in the index."),
            ("assistant", "aria", "Here is a plan with five dinners and two lunches."),
            ("user", "Alice", "ok"),
        ]
    )
    turns = [m for m in result.memories if m.kind == "turn"]
    assert [(m.message_ids, m.content.split(":")[0]) for m in turns] == [
        (("m1",), "Alice"),
        (("m3",), "aria"),
    ]
    assert turns[0].occurred_at == T0 + timedelta(minutes=1)


def test_facts_and_preferences_outrank_turns() -> None:
    result = _extract(
        [
            ("user", "Alice", "I live in Munich with my two cats. I prefer short answers."),
            ("assistant", "aria", "Noted, short answers from now on."),
        ]
    )
    by_kind = {m.kind: m for m in result.memories if m.kind != "turn"}
    assert by_kind["fact"].content == "Alice lives in Munich with their two cats. (2026-11-20)"
    assert by_kind["preference"].content == "Alice prefers short answers. (2026-11-20)"
    best_turn = max(m.importance for m in result.memories if m.kind == "turn")
    assert all(m.importance > best_turn for m in by_kind.values())


def test_facts_are_deduplicated() -> None:
    result = _extract(
        [
            ("user", "Alice", "I work at Acme as a nurse."),
            ("assistant", "aria", "Thanks for telling me."),
            ("user", "Alice", "i work at ACME as a nurse!"),
        ]
    )
    assert len([m for m in result.memories if m.kind == "fact"]) == 1


def test_subagent_session_gets_task_card() -> None:
    turns = [
        (
            "system",
            "orchestrator",
            "Fix the flaky test in tests/test_api.py. Do not touch "
            "other files. Done when all tests pass.",
        ),
        ("assistant", "coder", "Reproduced the failure. The race is in api/routes.py."),
        ("tool", "bash", "3 passed in 0.41s"),
        (
            "assistant",
            "coder",
            "Fixed it and opened #42, see https://ci.example.com/run/7. All tests pass.",
        ),
    ]
    card = _extract(turns, kind="subagent").task_card
    assert card is not None
    assert card.status == "done"
    assert card.goal.startswith("Fix the flaky test")
    assert card.boundary == ("Do not touch other files.",)
    assert card.acceptance == ("Done when all tests pass.",)
    assert {"tests/test_api.py", "api/routes.py", "#42", "https://ci.example.com/run/7"} <= set(
        card.artifacts
    )
    assert card.actions[0] == "Reproduced the failure."
    assert "3 passed in 0.41s" in card.actions
    assert _extract(turns, kind="direct").task_card is None


@pytest.mark.parametrize(
    ("last_word", "status"),
    [
        ("I am blocked: waiting for database credentials.", "blocked"),
        ("The migration failed with a syntax error.", "failed"),
        ("Still working through the remaining modules.", "in_progress"),
    ],
)
def test_task_card_status_follows_last_assistant_message(last_word: str, status: str) -> None:
    turns = [("user", "lead", "Migrate the schema."), ("assistant", "coder", last_word)]
    card = _extract(turns, kind="subagent").task_card
    assert card is not None and card.status == status


@pytest.mark.parametrize(
    "text",
    [
        "Ich habe morgen einen Termin beim Arzt. Kannst du mich daran erinnern? Danke!",
        "Mañana tengo una reunión con Lucía en Madrid. ¿Puedes recordármelo?",
        "明日は東京で会議があります。資料を準備してください！ありがとう。",
        "Завтра у меня встреча с Иваном в Москве. Напомни мне, пожалуйста?",
    ],
)
def test_non_english_sessions_are_summarised(text: str) -> None:
    result = _extract([("user", "Alice", text), ("assistant", "aria", text[:20])])
    assert result.episode.summary.strip()
    assert len(result.episode.topics) >= 1
    assert result.memories[0].message_ids == ("m0",)


def test_empty_whitespace_and_very_long_messages() -> None:
    long_text = ("The storage cluster report keeps growing. " * 500)[:20_000]
    result = _extract(
        [
            ("user", "Alice", ""),
            ("user", "Alice", "   \n\t  "),
            ("user", "Alice", long_text),
            ("assistant", "aria", "Understood."),
        ]
    )
    assert result.episode.summary.strip()
    turns = [m for m in result.memories if m.kind == "turn"]
    assert {m.message_ids for m in turns} == {("m2",)} and len(turns) >= 10
    assert all(m.content.startswith("Alice: ") for m in turns)
    assert all(len(m.content) <= len("Alice: ") + 2_000 for m in turns)
    assert turns[-1].content.endswith(long_text.strip()[-100:])
    assert result.episode.topics[0] == "storage cluster"  # a phrase said again and again


@pytest.mark.parametrize(
    "turns",
    [
        [],
        [("user", "Alice", "Hi")],
        [("tool", "search", "no results")],
    ],
)
def test_tiny_sessions_still_get_a_summary(turns: list[tuple[str, str, str]]) -> None:
    result = _extract(turns)
    assert result.episode.summary.count(".") >= 1
    assert result.episode.importance == 0.3


ABBREVIATED = [
    "I need to move my appointment with Dr. Smith to Friday morning.",
    "I work with Mr. Brown and Ms. Green on the audit.",
    "I have a call with Mrs. Lee about the lease.",
    "My teacher was Prof. Adams at the university.",
    "My sister lives on St. James Street near the park.",
    "I love citrus fruit, e.g. lemons and limes.",
    "I prefer aisle seats, i.e. the ones near the exit.",
    "I like apples, pears, etc. for breakfast.",
    "I prefer TAP vs. Iberia on short flights.",
    "My seat is No. 14 on the left side.",
    "I love the books by J. R. R. Tolkien.",
]


@pytest.mark.parametrize("sentence", ABBREVIATED)
def test_an_abbreviation_does_not_end_the_sentence(sentence: str) -> None:
    result = _extract([("user", "Alice", sentence), ("assistant", "aria", "Noted.")])
    salient = [m.content for m in result.memories if m.kind in ("fact", "preference")]
    assert len(salient) == 1
    assert salient[0].startswith("Alice")
    assert salient[0].endswith(f"{' '.join(sentence.split()[-4:])} (2026-11-20)")


def test_a_sentence_still_ends_after_a_short_word() -> None:
    result = _extract([("user", "Alice", "No. I prefer tea. Coffee keeps me up.")])
    salient = [m.content for m in result.memories if m.kind in ("fact", "preference")]
    assert salient == ["Alice prefers tea. (2026-11-20)"]


def test_i_and_its_contractions_never_glue_onto_a_name() -> None:
    result = _extract(
        [
            ("user", "Alice", "We could meet in Porto in May I'd say, or in October I'm free."),
            ("assistant", "aria", "On Friday I'll book it, and Monday I've kept for Bob."),
            ("user", "Alice", "Then Tuesday I call Dr. Smith about it."),
        ]
    )
    entities = set(result.episode.entities)
    assert {"Porto", "October", "Friday", "Monday", "Bob", "Tuesday", "Smith"} <= entities
    glued = [e for e in entities if {"I", "I'd", "I'm", "I'll", "I've"} & set(e.split())]
    assert glued == [] and "Dr" not in entities
