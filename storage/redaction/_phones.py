"""Phone numbers, found and validated by ``phonenumbers`` (Google's libphonenumber).

The matcher runs at leniency VALID: the number must exist in its country's numbering plan.
Numbers with a ``+`` country code are found whatever the regions; national formats
("030 12345678", "01 23 45 67 89", "912 345 678") only for the configured regions. On top
of the matcher's own exclusions (dates, times), a match is dropped when it looks like
something else: right after an identifier word ("order", "Rechnung", "#"), next to an amount
("€", "EUR"), a valid ISBN, a date or time of day, or a bare run of digits with no phone
word before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from phonenumbers import Leniency, PhoneNumberMatcher
from stdnum import isbn

from storage.redaction._finders import Span
from storage.redaction._words import words

_CUES = frozenset(w.rstrip(".") for w in words("phone", "cues"))
_IDENTIFIERS = frozenset(w.rstrip(".") for w in words("phone", "identifiers"))
_CURRENCY = frozenset(words("currency", "words"))
# Where a phone number may be: a digit run with separators, at least 6 digits long.
_CLUSTER = re.compile(r"[+(]?\d[\d \t().\-/]{4,24}\d")
_TOKEN = re.compile(r"#|[^\W\d_][\w.'/]*|[€$£¥]")
_YEAR_FIRST = re.compile(r"^(?:19|20)\d\d[-/.]\d+$")
# Dates (2026-11-20, 20.11.2026, 11/20/2026), each with a time of day if one follows: the
# matcher's own date test misses a date and the hour after it ("2026-11-20 23" of
# "2026-11-20 23:30:00", which it took for a number).
_DATE_TIME = re.compile(
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})"
    r"(?:[ T]\d{1,2}(?::\d{2}){1,2}(?:\.\d+)?)?"
)


def phones(text: str, regions: Sequence[str]) -> Iterator[Span]:
    """Valid phone numbers in ``text`` that do not look like ids, amounts, ISBNs, years,
    dates or times of day."""
    dates = [m.span() for m in _DATE_TIME.finditer(text)]
    for cluster in _CLUSTER.finditer(text):
        if sum(c.isdigit() for c in cluster.group()) < 6:
            continue
        start = max(0, cluster.start() - 2)
        window = text[start : cluster.end() + 2]
        for region in regions or ("ZZ",):
            whole = False
            for match in PhoneNumberMatcher(window, region, leniency=Leniency.VALID):
                begin, end = start + match.start, start + match.end
                whole = whole or (begin <= cluster.start() + 1 and end >= cluster.end())
                dated = any(begin < stop and start_ < end for start_, stop in dates)
                if not dated and _plausible(text, begin, end, match.raw_string):
                    # The national number: "+49 30 1234567" and "030 1234567" are one value
                    # even when the matcher read the second under another region first.
                    yield Span(begin, end, "PHONE", str(match.number.national_number))
            if whole:  # one number is the whole cluster: other regions cannot add one
                break


def _plausible(text: str, start: int, end: int, raw: str) -> bool:
    before = _tokens(text[max(0, start - 40) : start])
    after = _tokens(text[end : end + 12])
    if _CURRENCY & set(before[-1:] + after[:1]) or _IDENTIFIERS & set(before[-3:]):
        return False
    if _CUES & set(before[-4:]):
        return True
    compact = raw.replace(" ", "")
    if raw.isdigit() or _YEAR_FIRST.match(compact):
        return False
    return raw.startswith("+") or not _isbn_shaped(raw)


def _tokens(text: str) -> list[str]:
    """Lower-cased words and symbols, a closing period dropped ("Tel." and "tel" are one)."""
    return [t.lower().rstrip(".") for t in _TOKEN.findall(text)]


def _isbn_shaped(raw: str) -> bool:
    """A valid ISBN written as one: 978/979 and 13 digits, or four hyphenated groups."""
    digits = re.sub(r"\D", "", raw)
    shaped = digits.startswith(("978", "979")) or len(raw.split("-")) == 4
    return shaped and isbn.is_valid(raw)
