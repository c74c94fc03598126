"""Speakers' display names, and first-person sentences told about their speaker."""

from __future__ import annotations

import pytest

from tasks.extraction import as_note, attributed, display_name


@pytest.mark.parametrize(
    ("sentence", "note"),
    [
        ("I signed up for the half marathon.", "Mara signed up for the half marathon."),
        ("My longest run so far is 12 km.", "Mara's longest run so far is 12 km."),
        ("I'm allergic to penicillin.", "Mara is allergic to penicillin."),
        ("I've booked the 09:40 flight.", "Mara has booked the 09:40 flight."),
        ("I\u2019ll look for new shoes.", "Mara will look for new shoes."),
        ("I need to move my appointment.", "Mara needs to move their appointment."),
        ("I really hate early flights.", "Mara really hates early flights."),
        ("I usually go to bed at 11.", "Mara usually goes to bed at 11."),
        ("I try to fix my bike.", "Mara tries to fix their bike."),
        ("I don't eat meat.", "Mara doesn't eat meat."),
        ("I ran 12 km and I felt great.", "Mara ran 12 km and Mara felt great."),
        ("I went to the running store.", "Mara went to the running store."),
        ("Remind me to call the vet.", "Remind Mara to call the vet."),
    ],
)
def test_english_first_person_statements_become_notes(sentence: str, note: str) -> None:
    assert as_note(sentence, "Mara") == note


@pytest.mark.parametrize(
    "sentence",
    [
        "Should I buy new shoes?",  # a question keeps its voice
        "Three weekdays plus a long run on Sunday.",  # nothing to rewrite
        "Mine have about 700 km on them.",  # "mine" is not rewritten
        "I, too, went.",  # "I" not followed by a verb
        "Ich habe morgen einen Termin beim Arzt.",  # other languages keep their words
        "明日は東京で会議があります。",
    ],
)
def test_what_cannot_be_rewritten_for_certain_is_left_alone(sentence: str) -> None:
    assert as_note(sentence, "Mara") is None


def test_display_names_get_their_capitals_and_generic_speakers_a_role() -> None:
    assert display_name("aria", "assistant") == "Aria"
    assert display_name("elise", "user") == "Elise"
    assert display_name("jean luc", "user") == "Jean Luc"
    assert display_name("McKenzie", "user") == "McKenzie"  # written with capitals: as written
    assert display_name("健二", "user") == "健二"
    assert display_name("user", "user") == "the user"
    assert display_name("  ", "assistant") == "the assistant"


def test_attribution_prefers_a_note_then_asked_then_a_label() -> None:
    assert attributed("I'm in Lyon now.", "Mara") == "Mara is in Lyon now."
    assert attributed("Is it far?", "Mara") == "Mara asked: Is it far?"
    assert attributed("Take the train.", "Aria") == "Aria: Take the train."
    assert attributed("Lena might join, I'll ask her.", "Mara") == (
        "Mara: Lena might join, I'll ask her."
    )
