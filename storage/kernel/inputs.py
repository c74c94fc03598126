"""One gate per kind of input: every door checks a value of one kind with the same rules.

The doors are JSONL transcripts, queue payloads, the HTTP API, MCP, documents and the
evaluation's labelled sets; each declares its fields with the types below, so a value that
one door refuses, every door refuses, with the same words.

- **Text** (``StorableText``): no NUL and no lone surrogate, which PostgreSQL stores
  neither of (JSON's ``"\\u0000"`` or ``"\\ud800"``, a file's bytes that were not UTF-8).
- **Labels** (``Label``: titles, speakers, agents): text that other files show on one line.
  Line breaks and control characters become spaces, runs of white space one space.
- **Identifiers** (``Identifier``: session, message and document ids): 1-200 characters
  with no white space, no control character and none of ``/ \\ < >``, so an id can name a
  file, a block marker (``<!-- archivist:block daily:<id>@... -->``) and a log line.
- **Times** (``Moment``: when something was said or happened): an ISO 8601 string with a
  UTC offset, from 1900-01-01 (``EARLIEST``) to one day after now (``FUTURE_SLACK``, for
  clocks that run ahead or a zone written wrong). Before that is no conversation; after it
  a memory would count as new for ever, never ageing. JSON numbers are refused, not read
  as Unix time, and so are the representable range's edges that parse but cannot be
  shown in UTC (``0001-01-01T00:00:00+01:00`` is in year 0). A replayed history (the
  evaluation) passes its own clock as the validation context ``{"now": ...}``
  (``LATEST_INSTANT`` for a labelled history, which has no today).
- **Instants** (``Instant``: what a run or a search is about, ``as_of`` and time-range
  bounds): the same form, from 1900-01-01 to 2200-01-01 (``LATEST_INSTANT``), so a run can
  be dated ahead of the clock but never outside what every part of the stack reads.
- **Token budgets** (``TokenBudget``: how much context a search or a priming may fill):
  a whole number from 1 to ``MAX_BUDGET_TOKENS``, given as a number (not text, not a
  boolean, not a fraction), so that every door refuses "500" or 5e2 alike.
- **Keys of JSON objects** (``check_keys``): field names are text too, without control
  characters, since errors name them.

Reports and terminals show user text through ``printable``, which escapes control
characters instead of passing them on.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ValidationError, ValidationInfo

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
FUTURE_SLACK = timedelta(days=1)
LATEST_INSTANT = datetime(2200, 1, 1, tzinfo=UTC)
EXAMPLE_TIME = "2026-11-20T09:15:00Z"

# PostgreSQL stores neither NUL in text or jsonb nor lone surrogates, which are not Unicode.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ID_REFUSED = re.compile(r"[\s/\\<>\x00-\x1f\x7f-\x9f]")
ID_MAX = 200
MAX_BUDGET_TOKENS = 100_000


def storable(value: str) -> str:
    """The text unchanged, or ValueError naming the first character PostgreSQL cannot store."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return value
    char = found.group()
    what = _char_name(char) if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
    raise ValueError(f"holds {what}, which PostgreSQL cannot store")


def label(value: str) -> str:
    """Storable text on one line: line breaks, tabs and control characters become spaces."""
    storable(value)
    return " ".join(_CONTROL.sub(" ", value).split())


def identifier(value: str) -> str:
    """The id unchanged, or ValueError saying which rule it breaks (never echoing it)."""
    storable(value)
    if not 1 <= len(value) <= ID_MAX:
        raise ValueError(f"must be 1-{ID_MAX} characters, not {len(value)}")
    found = _ID_REFUSED.search(value)
    if found is not None:
        raise ValueError(
            f"holds {_char_name(found.group())}: ids take no white space, no control "
            "characters and none of / \\ < >"
        )
    return value


def _char_name(char: str) -> str:
    """``a nul character (U+0000)``-like words for a refused character, never the character."""
    if char == "\x00":
        return "a NUL character (U+0000)"
    name = unicodedata.name(char, "").lower() or "a control character"
    return f"{name} (U+{ord(char):04X})"


def token_budget(value: object) -> int:
    """A token budget: an int from 1 to ``MAX_BUDGET_TOKENS``, else ValueError saying so."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"a token budget must be a whole number, not {type(value).__name__}")
    if not 1 <= value <= MAX_BUDGET_TOKENS:
        raise ValueError(f"a token budget must be 1 to {MAX_BUDGET_TOKENS}, not {value}")
    return value


def _time_input(value: object) -> object:
    """A time as given: a ``datetime`` from Python, else ISO 8601 text, never a number."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"not an ISO 8601 time such as {EXAMPLE_TIME}") from None
    raise ValueError(
        f"must be an ISO 8601 string such as {EXAMPLE_TIME}, not {type(value).__name__} "
        "(a number is not read as Unix time)"
    )


def _within(value: datetime, latest: datetime, why_latest: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"needs a UTC offset, e.g. {EXAMPLE_TIME}")
    if value < EARLIEST:
        raise ValueError(f"is before {EARLIEST:%Y-%m-%d}, the earliest time Archivist takes")
    if value > latest:
        raise ValueError(f"is after {latest.isoformat(timespec='seconds')} ({why_latest})")
    return value


def check_moment(value: datetime, now: datetime | None = None) -> datetime:
    """A time something happened: aware, from 1900-01-01 to a day after ``now`` (at most
    2200-01-01)."""
    latest = min((now or datetime.now(UTC)) + FUTURE_SLACK, LATEST_INSTANT)
    return _within(value, latest, "a time that has not come yet, beyond a day's slack")


def check_instant(value: datetime) -> datetime:
    """A moment a run or search is about: aware, from 1900-01-01 to 2200-01-01."""
    return _within(value, LATEST_INSTANT, "the latest time a run or search may name")


def _moment(value: datetime, info: ValidationInfo) -> datetime:
    context = info.context if isinstance(info.context, Mapping) else {}
    now = context.get("now")
    return check_moment(value, now if isinstance(now, datetime) else None)


def check_keys(value: object, *, depth: int = 0) -> None:
    """ValueError if a key of any JSON object inside ``value`` holds a NUL, a lone surrogate
    or a control character (errors name keys; a key must be safe to show and store)."""
    if depth > 64:
        return  # the JSON readers bound nesting; deeper than this holds no new keys to check
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"a field name is {type(key).__name__}, not text")
            if _UNSTORABLE.search(key) or _CONTROL.search(key):
                raise ValueError(f"a field name holds {_char_name(_first_bad(key))}")
            check_keys(item, depth=depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            check_keys(item, depth=depth + 1)


def _first_bad(key: str) -> str:
    found = _UNSTORABLE.search(key) or _CONTROL.search(key)
    assert found is not None  # the caller found one
    return found.group()


def describe(exc: ValidationError) -> str:
    """Each problem of a refused record as ``field: rule (got its shape)``: never the value,
    which may be content (reports and logs hold none), and field names made printable."""
    parts = []
    for err in exc.errors():
        loc = printable(".".join(str(p) for p in err["loc"]) or "object", 80)
        if err["type"] == "missing":
            parts.append(f"missing field {loc!r}")
        else:
            rule = str(err["msg"]).removeprefix("Value error, ")
            parts.append(f"{loc}: {rule} (got {_shape(err.get('input'))})")
    return "; ".join(parts)


def _shape(value: object) -> str:
    """What a refused value was, never what it said."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return f"text of {len(value)} characters"
    return type(value).__name__


def storable_json(value: Any) -> Any:
    """A JSON-like value whose strings and keys PostgreSQL's ``jsonb`` takes: NUL and lone
    surrogates escaped (``\\x00``, ``\\ud800``). For reports, whose text quotes input."""
    if isinstance(value, str):
        return _UNSTORABLE.sub(lambda m: _escape(m.group()), value)
    if isinstance(value, Mapping):
        return {storable_json(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def printable(value: str, limit: int = 120) -> str:
    """Text safe to print on one line: control characters and lone surrogates escaped as
    ``\\n``, ``\\x00``, ``\\ud800``; cut to ``limit`` characters with '…'."""
    shown = "".join(_escape(c) for c in value[: limit + 1])
    return shown if len(value) <= limit else shown[:limit] + "…"


def _escape(char: str) -> str:
    if _CONTROL.match(char) or _UNSTORABLE.match(char):
        return char.encode("unicode_escape", "backslashreplace").decode("ascii")
    return char


StorableText = Annotated[str, AfterValidator(storable)]
Label = Annotated[str, AfterValidator(label)]
Identifier = Annotated[str, AfterValidator(identifier)]
Moment = Annotated[datetime, BeforeValidator(_time_input), AfterValidator(_moment)]
Instant = Annotated[datetime, BeforeValidator(_time_input), AfterValidator(check_instant)]
# Before any coercion: JSON's "500", 500.0 and true are refused, not read as 500 or 1.
TokenBudget = Annotated[int, BeforeValidator(token_budget)]
__all__ = [
    "EARLIEST",
    "FUTURE_SLACK",
    "LATEST_INSTANT",
    "MAX_BUDGET_TOKENS",
    "Identifier",
    "Instant",
    "Label",
    "Moment",
    "StorableText",
    "TokenBudget",
    "check_instant",
    "check_keys",
    "check_moment",
    "describe",
    "identifier",
    "label",
    "printable",
    "storable",
    "storable_json",
    "token_budget",
]
