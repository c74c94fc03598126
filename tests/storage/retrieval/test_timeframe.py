"""Time expressions in questions, read against the search's as_of (never the clock)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from storage.retrieval import TimeWindow, asks_about_now, read_time, time_window

# A Wednesday in June; every window below is read as of it.
AS_OF = datetime(2026, 6, 10, 15, 0, tzinfo=UTC)


def days(query: str, as_of: datetime = AS_OF, tz: ZoneInfo | None = None) -> tuple[date, date]:
    """The window's first and last day (its end is exclusive)."""
    window = time_window(query, as_of, tz or ZoneInfo("UTC"))
    assert window is not None, query
    return window.start.date(), (window.end - timedelta(microseconds=1)).date()


def one(day: date) -> tuple[date, date]:
    return day, day


EXPECTED = {
    "en": [
        ("What did we decide yesterday?", one(date(2026, 6, 9))),
        ("the day before yesterday", one(date(2026, 6, 8))),
        ("What did I say last week about the boiler?", (date(2026, 6, 1), date(2026, 6, 7))),
        ("which hotel did we pick three months ago?", (date(2026, 2, 25), date(2026, 3, 27))),
        ("what did I cook a couple of days ago", one(date(2026, 6, 8))),
        ("What did the vet say in May?", (date(2026, 5, 1), date(2026, 5, 31))),
        ("what happened in July?", (date(2025, 7, 1), date(2025, 7, 31))),  # the latest July
        ("in March 2025", (date(2025, 3, 1), date(2025, 3, 31))),
        ("what did I plan in May last year?", (date(2025, 5, 1), date(2025, 5, 31))),
        ("what was on 3 March?", one(date(2026, 3, 3))),
        ("the call on March 3rd", one(date(2026, 3, 3))),
        ("the party on the 24th of December", one(date(2025, 12, 24))),
        ("what did we agree on 2025-05-03", one(date(2025, 5, 3))),
        ("where did we go last summer", (date(2025, 6, 1), date(2025, 8, 31))),
        ("what have I read this year", (date(2026, 1, 1), date(2026, 12, 31))),
        ("which flat did I see in 2025", (date(2025, 1, 1), date(2025, 12, 31))),
        ("what did I eat over the past two weeks", (date(2026, 5, 27), date(2026, 6, 10))),
        ("what did Sam say on Monday?", one(date(2026, 6, 8))),
        ("last Wednesday's meeting", one(date(2026, 6, 3))),  # not today
    ],
    "de": [
        ("Was haben wir gestern beschlossen?", one(date(2026, 6, 9))),
        ("vorgestern", one(date(2026, 6, 8))),
        ("Was war letzte Woche los?", (date(2026, 6, 1), date(2026, 6, 7))),
        ("Was habe ich letzten Monat gekauft?", (date(2026, 5, 1), date(2026, 5, 31))),
        ("letztes Jahr", (date(2025, 1, 1), date(2025, 12, 31))),
        ("Welches Hotel vor drei Monaten?", (date(2026, 2, 25), date(2026, 3, 27))),
        ("Was hat der Arzt im Mai gesagt?", (date(2026, 5, 1), date(2026, 5, 31))),
        ("Was war am 3. März?", one(date(2026, 3, 3))),
        ("Wohin sind wir letzten Sommer gefahren?", (date(2025, 6, 1), date(2025, 8, 31))),
        ("im Jahr 2025", (date(2025, 1, 1), date(2025, 12, 31))),
        ("in den letzten zwei Wochen", (date(2026, 5, 27), date(2026, 6, 10))),
        ("am Montag", one(date(2026, 6, 8))),
    ],
    "es": [
        ("¿Qué decidimos ayer?", one(date(2026, 6, 9))),
        ("anteayer", one(date(2026, 6, 8))),
        ("¿Qué pasó la semana pasada?", (date(2026, 6, 1), date(2026, 6, 7))),
        ("el mes pasado", (date(2026, 5, 1), date(2026, 5, 31))),
        ("¿Dónde vivía el año pasado?", (date(2025, 1, 1), date(2025, 12, 31))),
        ("¿Qué hotel reservé hace tres meses?", (date(2026, 2, 25), date(2026, 3, 27))),
        ("¿Qué dijo el médico en mayo?", (date(2026, 5, 1), date(2026, 5, 31))),
        ("¿Qué pasó el 3 de marzo de 2025?", one(date(2025, 3, 3))),
        ("el verano pasado", (date(2025, 6, 1), date(2025, 8, 31))),
        ("en mayo del año pasado", (date(2025, 5, 1), date(2025, 5, 31))),
        ("el lunes", one(date(2026, 6, 8))),
    ],
    "ja": [
        ("昨日は何を決めた？", one(date(2026, 6, 9))),
        ("一昨日", one(date(2026, 6, 8))),
        ("先週の会議で何を話した？", (date(2026, 6, 1), date(2026, 6, 7))),
        ("先月買ったもの", (date(2026, 5, 1), date(2026, 5, 31))),
        ("去年どこに住んでた？", (date(2025, 1, 1), date(2025, 12, 31))),
        ("3か月前に予約したホテル", (date(2026, 2, 25), date(2026, 3, 27))),
        ("三ヶ月前", (date(2026, 2, 25), date(2026, 3, 27))),
        ("5月に獣医は何と言った？", (date(2026, 5, 1), date(2026, 5, 31))),
        ("3月3日に何があった？", one(date(2026, 3, 3))),
        ("去年の夏はどこへ行った？", (date(2025, 6, 1), date(2025, 8, 31))),
        ("今月、実家に何を取り付けた？", (date(2026, 6, 1), date(2026, 6, 30))),
        ("2025年5月", (date(2025, 5, 1), date(2025, 5, 31))),
        ("この2週間", (date(2026, 5, 27), date(2026, 6, 10))),
    ],
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [case for cases in EXPECTED.values() for case in cases],
    ids=[f"{lang}-{n}" for lang, cases in EXPECTED.items() for n in range(len(cases))],
)
def test_expressions_of_each_language_name_their_window(
    query: str, expected: tuple[date, date]
) -> None:
    assert days(query) == expected


def test_a_window_is_read_against_as_of_not_the_clock() -> None:
    for as_of, expected in [
        (datetime(2024, 2, 29, 9, tzinfo=UTC), (date(2024, 1, 1), date(2024, 1, 31))),
        (datetime(2025, 1, 15, 9, tzinfo=UTC), (date(2024, 12, 1), date(2024, 12, 31))),
    ]:
        assert days("what did I buy last month?", as_of) == expected
    # A month or written date without a year is the latest one up to as_of.
    assert days("in May", datetime(2026, 4, 1, tzinfo=UTC))[0] == date(2025, 5, 1)
    assert days("in May", datetime(2026, 5, 20, tzinfo=UTC))[0] == date(2026, 5, 1)
    assert days("on 3 March", datetime(2026, 3, 2, tzinfo=UTC)) == one(date(2025, 3, 3))
    assert days("on 3 March", datetime(2026, 3, 4, tzinfo=UTC)) == one(date(2026, 3, 3))
    # A season going on is "this summer", not "last summer".
    assert days("last summer", datetime(2026, 7, 1, tzinfo=UTC))[0] == date(2025, 6, 1)
    assert days("this summer", datetime(2026, 7, 1, tzinfo=UTC))[0] == date(2026, 6, 1)


def test_the_day_is_that_of_the_configured_time_zone() -> None:
    late = datetime(2026, 6, 10, 23, 30, tzinfo=UTC)  # already 11 June in Tokyo
    tokyo = ZoneInfo("Asia/Tokyo")
    assert days("yesterday", late) == one(date(2026, 6, 9))
    assert days("yesterday", late, tokyo) == one(date(2026, 6, 10))
    window = time_window("yesterday", late, tokyo)
    assert window is not None and window.start == datetime(2026, 6, 10, tzinfo=tokyo)


@pytest.mark.parametrize(
    "query",
    [
        "where is the VPN token?",
        "May I ask what you know about the budget?",  # a modal, not the month
        "which 3 tickets did Jan book",
        "recipe with 2 days of proving",
        "今でも運転してる？",
        "",
    ],
)
def test_a_question_naming_no_time_has_no_window(query: str) -> None:
    assert time_window(query, AS_OF, UTC) is None


def test_inside_is_one_within_and_falls_to_zero_one_length_outside() -> None:
    start = datetime(2026, 6, 1, tzinfo=UTC)
    window = TimeWindow(start, start + timedelta(days=10), "test")
    assert window.inside(start) == 1.0
    assert window.inside(start + timedelta(days=9, hours=23)) == 1.0
    assert window.inside(start + timedelta(days=15)) == pytest.approx(0.5)
    assert window.inside(start - timedelta(days=5)) == pytest.approx(0.5)
    assert window.inside(start - timedelta(days=10)) == 0.0
    assert window.inside(start + timedelta(days=40)) == 0.0
    assert str(window) == '"test": 2026-06-01 to 2026-06-10'


@pytest.mark.parametrize(
    ("query", "now"),
    [
        ("Where do I live now?", True),
        ("Which coworking space do I use these days?", True),
        ("Do I still play the cello?", True),
        ("What is my current day rate?", True),
        ("Wo wohne ich jetzt?", True),
        ("Bei welchem Stromanbieter bin ich inzwischen?", True),
        ("¿Dónde trabajo ahora?", True),
        ("¿Todavía juego al tenis?", True),
        ("今どこに住んでる？", True),
        ("父の今の担当医は誰？", True),
        ("最新のスコアは？", True),
        ("When is the dentist?", True),  # the latest arrangement of a plan
        ("What time is my talk slot on the 4th?", True),
        ("Wann ist Pauls Einschulung?", True),
        ("¿Cuándo es la boda?", True),
        ("When was the dentist?", False),  # that moment, not how it stands
        ("When did we book the flights?", False),
        ("Whenever is fine", False),
        ("Where did I live in 2024?", False),
        ("What did the dentist say?", False),
        ("Wo habe ich gewohnt?", False),
        ("今日は何を食べた？", False),  # today names a time; it does not ask about now
        ("今月、実家に何を取り付けた？", False),
        ("The snowdrops came up early", False),  # "now" inside a word
    ],
)
def test_questions_about_now(query: str, *, now: bool) -> None:
    assert asks_about_now(query) is now
    assert read_time(query, AS_OF, UTC).about_now is now
