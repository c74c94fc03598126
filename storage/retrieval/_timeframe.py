"""What a question says about time: the window it names, and whether it asks about now.

"What did we decide last week?", "in May", "three months ago", "先月", "letzten Sommer",
"el año pasado": a question that names a time asks about what was said then.
``time_window`` finds the first such expression (English, German, Spanish, Japanese) and
reads it against the search's ``as_of`` into ``[start, end)`` in the configured time zone;
ranking lifts the memories inside it (``TimeWindow.inside``: 1 within the window, falling
to 0 at one window's length outside it), so an answer from then ranks above an equally
relevant one from another time, while a clearly more relevant one still wins.

Relative expressions (yesterday, last week, N months ago, the past N days, this year,
seasons, weekdays) are computed here; dates written out ("3 March", "3. März", "3 de
marzo", "3月3日", "2025-05-03") are found here and read by ``dateparser``. A month, season,
weekday or date without a year is the latest one before ``as_of``.

``asks_about_now``: "where do I live now?", "currently", "still", "these days", "jetzt",
"ahora", "今", or when something is in the present tense ("when is the dentist?"): a
question about how things stand, for which a newer statement of the same
thing replaces an older one (``_ranking``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from storage.retrieval._time_words import MONTHS, NUMBERS, SEASONS, SPANS, UNITS, WEEKDAYS


# Unit words of the four languages: day, week, month or year.
def _alternatives(words: Iterable[str]) -> str:
    """A regex group of the words, longest first (so "weeks" is tried before "week")."""
    return "(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + ")"


_NUM = _alternatives([*NUMBERS, *map(str, range(1, 100))])
_UNIT = _alternatives(UNITS)
_MONTH = _alternatives(MONTHS) + r"\.?"
_SEASON = _alternatives(SEASONS)
_WEEKDAY = _alternatives(WEEKDAYS)
_YEAR = r"((?:19|20)\d\d)"
_LAST = r"(?:last|previous|letzte[nmrs]?|vergangene[nmrs]?|vorige[nmrs]?)"
_THIS = r"(?:this|diese[nmrs]?|est[ea])"
_LAST_YEAR = r"\b(?:last year|letzten jahres|vergangenen jahres|del año pasado)\b|去年|昨年"

Span = tuple[date, date]


@dataclass(frozen=True)
class TimeWindow:
    """``[start, end)``: the time a question names, and the words that named it."""

    start: datetime
    end: datetime
    phrase: str

    def inside(self, moment: datetime) -> float:
        """1 inside the window, falling linearly to 0 at one window's length outside it."""
        if self.start <= moment < self.end:
            return 1.0
        length = (self.end - self.start).total_seconds()
        gap = (self.start - moment if moment < self.start else moment - self.end).total_seconds()
        return max(0.0, 1.0 - gap / length)

    def __str__(self) -> str:
        last = self.end - timedelta(microseconds=1)
        shown = f"{self.start:%Y-%m-%d}" + ("" if last.date() == self.start.date() else
                                             f" to {last:%Y-%m-%d}")  # fmt: skip
        return f'"{self.phrase}": {shown}'


@dataclass(frozen=True)
class QueryTime:
    """When a search is asked (``as_of``), and what its question says about time."""

    as_of: datetime
    window: TimeWindow | None = None
    about_now: bool = False


def read_time(query: str, as_of: datetime, tz: tzinfo) -> QueryTime:
    """What ``query`` says about time, as of ``as_of`` in ``tz``."""
    return QueryTime(as_of, time_window(query, as_of, tz), asks_about_now(query))


def time_window(query: str, as_of: datetime, tz: tzinfo) -> TimeWindow | None:
    """The window the first time expression of ``query`` names, read as of ``as_of`` in
    ``tz``; None when the query names no time."""
    if not _may_name_time(query):
        return None  # most questions: one look at their words instead of every rule
    today = as_of.astimezone(tz).date()
    for pattern, read in _RULES:
        for found in pattern.finditer(query):
            span = read(found, today, query)
            if span is not None and span[0] < span[1]:
                start, end = span
                return TimeWindow(_at(start, tz), _at(end, tz), found.group(0).strip())
    return None


_NOW_WORDS = re.compile(
    r"\b(?:now|nowadays|these days|currently|current|at the moment|at present|presently"
    r"|still|anymore|any more|latest|most recent(?:ly)?|recently|lately|so far|by now|yet)\b"
    r"|\b(?:jetzt|aktuell(?:e[nmrs]?)?|derzeit(?:ig(?:e[nmrs]?)?)?|momentan|zurzeit|gerade"
    r"|heutzutage|inzwischen|mittlerweile|noch|neueste[nmrs]?|zuletzt|kürzlich)\b"
    r"|\b(?:ahora|actual(?:es|mente)?|hoy en día|todavía|aún|ya no|sigo|sigue"
    r"|últimamente|recientemente|al final)\b"
    # 今 alone (今どこ, 今の): not 今日 / 今週 / 今月 / 今年 / 今朝 / 今度 / 今回, which name a time
    r"|今(?![日週月年朝晩夜度回])|いま|現在|最新|最近|まだ|結局|今でも",
    re.IGNORECASE,
)
# A question in the present tense about when something is ("when is the dentist?", "what
# time is my talk?", "wann ist ...", "¿cuándo es ...?"): a plan's latest arrangement is the
# answer, as for "now" (a past-tense "when was / did" asks about that moment).
_WHEN_IS = re.compile(
    r"\b(?:when(?:'s| is| are)|what (?:time|day|date) (?:is|are)|which day is)\b"
    r"|\b(?:wann (?:ist|sind)|um wie viel uhr ist)\b"
    r"|\b(?:cuándo (?:es|son)|a qué hora es)\b",
    re.IGNORECASE,
)


def asks_about_now(query: str) -> bool:
    """Whether ``query`` asks how things stand now (currently, still, these days, jetzt,
    todavía, 今..., or when something is, in the present tense): the newest statement of a
    thing is the answer."""
    return _NOW_WORDS.search(query) is not None or _WHEN_IS.search(query) is not None


# Every rule below needs one of these: a word of them, a digit, or a CJK time character.
_CUE_WORDS = frozenset(
    {*UNITS, *MONTHS, *SEASONS, *WEEKDAYS, "yesterday", "today", "tonight", "morning",
     "gestern", "vorgestern", "heute", "ayer", "anteayer", "hoy"}
)  # fmt: skip
_CUE_MARKS = re.compile(r"[\d日週月年昨今先去前春夏秋冬曜]|おととい|きのう|きょう")


def _may_name_time(query: str) -> bool:
    return _CUE_MARKS.search(query) is not None or not _CUE_WORDS.isdisjoint(
        re.findall(r"[^\W\d_]+", query.lower())
    )


def _at(day: date, tz: tzinfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=tz)


def _day(day: date) -> Span:
    return day, day + timedelta(days=1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _count(word: str) -> int:
    return NUMBERS.get(word.lower()) or int(word)


def _days_back(n: int) -> Callable[[re.Match[str], date, str], Span]:
    return lambda found, today, query: _day(today - timedelta(days=n))


def _ago(found: re.Match[str], today: date, query: str) -> Span:
    """Around the moment N units back: one unit wide, centred on it."""
    count, unit = (g for g in found.groups() if g)
    days = SPANS[UNITS[unit.lower()]]
    centre = today - timedelta(days=_count(count) * days)
    half = timedelta(days=days // 2)
    return centre - half, centre + half + timedelta(days=1)


def _past(found: re.Match[str], today: date, query: str) -> Span:
    """The last N units up to today."""
    count, unit = (g for g in found.groups() if g)
    return today - timedelta(days=_count(count) * SPANS[UNITS[unit.lower()]]), _day(today)[1]


def _calendar_unit(unit: str, today: date, back: int) -> Span:
    """The calendar week (from Monday), month or year ``back`` units before this one."""
    if unit == "day":
        return _day(today - timedelta(days=back))
    if unit == "week":
        monday = today - timedelta(days=today.weekday(), weeks=back)
        return monday, monday + timedelta(weeks=1)
    if unit == "month":
        first = _add_months(today.replace(day=1), -back)
        return first, _add_months(first, 1)
    return date(today.year - back, 1, 1), date(today.year - back + 1, 1, 1)


def _unit_back(back: int) -> Callable[[re.Match[str], date, str], Span]:
    def read(found: re.Match[str], today: date, query: str) -> Span:
        word = next(g for g in found.groups() if g)
        return _calendar_unit(UNITS.get(word.lower()) or UNITS[word[-1]], today, back)

    return read


def _month(found: re.Match[str], today: date, query: str) -> Span | None:
    """A month: of the year given, or of last year if the query says so, else the latest."""
    name, year = found.group(1) or found.group(4), found.group(2) or found.group(3)
    month = int(name) if name.isdigit() else MONTHS.get(name.lower().rstrip("."))
    if month is None or not 1 <= month <= 12:
        return None
    if year:
        start = date(int(year), month, 1)
    elif re.search(_LAST_YEAR, query, re.IGNORECASE):
        start = date(today.year - 1, month, 1)
    else:
        start = date(today.year if month <= today.month else today.year - 1, month, 1)
    return start, _add_months(start, 1)


def _season(*, ongoing: bool) -> Callable[[re.Match[str], date, str], Span]:
    """The latest such season begun by today (``ongoing``), or the latest one over by then
    ("last summer" in August is a year back)."""

    def read(found: re.Match[str], today: date, query: str) -> Span:
        first = SEASONS[next(g for g in found.groups() if g).lower()]
        start = date(today.year, first, 1)
        while start > today or (not ongoing and _add_months(start, 3) > today):
            start = date(start.year - 1, first, 1)
        return start, _add_months(start, 3)

    return read


def _weekday(found: re.Match[str], today: date, query: str) -> Span:
    """The latest such weekday before today."""
    weekday = WEEKDAYS[next(g for g in found.groups() if g).lower()]
    back = (today.weekday() - weekday - 1) % 7 + 1
    return _day(today - timedelta(days=back))


def _year(found: re.Match[str], today: date, query: str) -> Span:
    year = int(next(g for g in found.groups() if g))
    return date(year, 1, 1), date(year + 1, 1, 1)


def _written_date(found: re.Match[str], today: date, query: str) -> Span | None:
    """A date written out, read by dateparser as the latest such day up to today."""
    import dateparser  # only a question that writes a date loads it (about 0.3 s)

    settings = {
        "RELATIVE_BASE": datetime.combine(today, time(12)),
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
    text = found.group(0).strip()
    parsed = dateparser.parse(text, languages=["en", "de", "es", "ja"], settings=settings)
    return None if parsed is None else _day(parsed.date())


def _rule(
    read: Callable[[re.Match[str], date, str], Span | None], *patterns: str
) -> tuple[re.Pattern[str], Callable[[re.Match[str], date, str], Span | None]]:
    return re.compile("|".join(patterns), re.IGNORECASE), read


_B = r"(?<![^\W\d_])"  # a word starts here (CJK text has no spaces: no \b before it)

# The first rule that matches names the window; more precise expressions come first.
_RULES = [
    _rule(_days_back(2), r"\b(?:the )?day before yesterday\b", r"\bvorgestern\b",
          r"\banteayer\b", r"\bantes de ayer\b", "一昨日", "おととい"),
    _rule(_days_back(1), r"\byesterday\b", r"\bgestern\b", r"\bayer\b", "昨日", "きのう"),
    _rule(_days_back(0), r"\btoday\b", r"\bthis morning\b", r"\btonight\b", r"\bheute\b",
          r"\bhoy\b(?! en día)", "今日", "今朝", "きょう"),
    _rule(_written_date, r"\b\d{4}-\d{1,2}-\d{1,2}\b", r"\d{1,2}月\d{1,2}日",
          r"\b\d{1,2}(?:st|nd|rd|th)?\.?\s+(?:of\s+|de\s+)?" + _MONTH
          + r"(?:\s+(?:de\s+)?\d{4})?\b",
          r"\b" + _MONTH + r"\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?\b(?!\s*(?:days?|weeks?))"),
    _rule(_past, r"\b(?:in |over |during )?the (?:last|past) " + _NUM + r"\s+" + _UNIT + r"\b",
          r"\b(?:in den )?(?:letzten|vergangenen) " + _NUM + r"\s+" + _UNIT + r"\b",
          r"\b(?:en )?(?:los|las) últim[oa]s " + _NUM + r"\s+" + _UNIT + r"\b",
          r"(?:この|ここ)" + _NUM + _UNIT),
    _rule(_ago, _B + _NUM + r"\s+" + _UNIT + r"\s+ago\b",
          r"\bvor\s+" + _NUM + r"\s+" + _UNIT + r"\b",
          r"\bhace\s+" + _NUM + r"\s+" + _UNIT + r"\b",
          r"(\d{1,3}|[一二三四五六七八九十])\s*" + _UNIT + "前"),
    _rule(_month, r"\b(?:in|im|en|during|since|seit)\s+(?:(?:the month of|el mes de)\s+)?"
          + _MONTH + r"(?:\s+(?:de\s+|del\s+)?" + _YEAR + r")?\b",
          r"(?:" + _YEAR + r"年)?(\d{1,2})月(?!\d{0,2}日)"),
    _rule(_season(ongoing=False), r"\b" + _LAST + r"\s+" + _SEASON + r"\b",
          r"\b(?:el|la)\s+" + _SEASON + r"\s+pasad[oa]\b", "(?:去年|昨年)の" + _SEASON),
    _rule(_season(ongoing=True), r"\b(?:in(?: the)?|im|en(?: el)?|this|diese[nmrs]?|este)\s+"
          + _SEASON + r"\b", "今年の" + _SEASON),
    _rule(_weekday, r"\b(?:on|last|am|letzten|el)\s+" + _WEEKDAY + r"\b",
          r"([月火水木金土日])曜"),
    _rule(_unit_back(1), r"\b" + _LAST + r"\s+(week|month|year|woche|monat|jahr)\b",
          r"\b(?:la|el)\s+(semana|mes|año)\s+pasad[oa]\b", "先(週|月)", "(?:去|昨)(年)"),
    _rule(_unit_back(0), r"\b" + _THIS + r"\s+(week|month|year|woche|monat|jahr|semana|mes|año)\b",
          "今(週|月|年)"),
    _rule(_year, r"\b(?:in|im|en|during)\s+(?:(?:the year|jahr|el año)\s+)?" + _YEAR + r"\b",
          _YEAR + "年(?!\\d)"),
]  # fmt: skip
