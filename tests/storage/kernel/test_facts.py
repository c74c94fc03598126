"""A fact's closing (context and date) and the statement before it."""

from __future__ import annotations

from datetime import date

import pytest

from storage.kernel.facts import closing, statement


def test_the_closing_says_the_context_and_the_day() -> None:
    assert closing('in "Trip to Porto"', date(2026, 11, 27)) == ' (in "Trip to Porto", 2026-11-27)'
    assert closing("", date(2026, 11, 27)) == " (2026-11-27)"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('Alice prefers tea. (in "Trip to Porto", 2026-11-27)', "Alice prefers tea."),
        ('Nebraas is obsessed with them. (answering "Why "games"?", 2026-05-01)', None),
        ('Alice: Yes. (after "It costs 5 (five) EUR.", 2026-05-01)', "Alice: Yes."),
        ("Mara lives in Leipzig. (2026-05-02)", "Mara lives in Leipzig."),
        ("Dentist moved (again) to Tuesday", "Dentist moved (again) to Tuesday"),
        ("Budget (2026)", "Budget (2026)"),  # not a date: left as it is
        ("Turn text (in Porto, 2026-11-27)", "Turn text (in Porto, 2026-11-27)"),  # unquoted
    ],
)
def test_the_statement_is_the_text_without_its_closing(text: str, said: str | None) -> None:
    assert statement(text) == (said if said is not None else "Nebraas is obsessed with them.")
