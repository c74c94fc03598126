"""The demo's sample conversations: deterministic JSONL transcripts of three namespaces.

Every (namespace, day) draws from its own `random.Random`, seeded with a SHA-256 of the
namespace and the date, so moving `today` forward leaves earlier days' files unchanged.
Some features are pinned to the calendar (every third day all namespaces talk, and one of
them has a non-English, a one-message or a continued session), so any window of nine days
or more shows each of them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import posixpath
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import fsspec

from storage.kernel.records import MessageRecord, Role, SessionKind, SessionRecord, message_at
from tasks.samples import _corpus as corpus
from tasks.samples._corpus import Topic, Turn

DEMO_BAD_LINES = 4
NAMESPACES = ("alice", "bob", "team-atlas")

_AGENT = {"alice": "aria", "bob": "forge", "team-atlas": "atlas"}
_USER = {"alice": "Alice", "bob": "Bob"}
_REGULAR = {"alice": corpus.ALICE, "bob": corpus.BOB, "team-atlas": corpus.ATLAS}
_FIRST_START = 7 * 3600
_LAST_START = 20 * 3600
# Sessions end by 21:40 so that the bad lines, a few minutes later, stay before 22:00.
_DAY_END = 21 * 3600 + 40 * 60
_PINNED = ("foreign", "quick", "continues")

Style = Literal["regular", "foreign", "quick", "subagent"]


@dataclass(frozen=True)
class TranscriptFile:
    """One JSONL transcript: its path under the root and its whole text."""

    name: str
    text: str


@dataclass(frozen=True)
class _Plan:
    style: Style
    continues: bool = False


@dataclass(frozen=True)
class _Draft:
    name: str
    session: SessionRecord
    messages: list[MessageRecord]


def generate_demo(today: date, tz: ZoneInfo, *, days: int = 21) -> list[TranscriptFile]:
    """Transcripts for the `days` days ending at `today`, with DEMO_BAD_LINES bad lines."""
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    window = [today - timedelta(days=back) for back in range(days - 1, -1, -1)]
    drafts = [d for ns in NAMESPACES for day in window for d in _day(ns, day, today, tz)]
    lines = {d.name: [_session_line(d.session), *map(_message_line, d.messages)] for d in drafts}
    _add_bad_lines(lines, {d.name: d for d in drafts})
    return [TranscriptFile(name, "\n".join(lines[name]) + "\n") for name in sorted(lines)]


def write_transcripts(
    fs: fsspec.AbstractFileSystem, root: str, files: Sequence[TranscriptFile]
) -> int:
    """Write each file under `root`, skipping files whose bytes are already identical."""
    written = 0
    for file in files:
        path = posixpath.join(root.rstrip("/"), file.name)
        data = file.text.encode("utf-8")
        if fs.exists(path) and fs.cat_file(path) == data:
            continue
        fs.makedirs(posixpath.dirname(path), exist_ok=True)
        fs.pipe_file(path, data)
        written += 1
    return written


def _rng(*parts: str) -> random.Random:
    digest = hashlib.sha256("|".join(parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _day(ns: str, day: date, today: date, tz: ZoneInfo) -> list[_Draft]:
    rng = _rng(ns, day.isoformat())
    plans = _plans(ns, day, rng)
    starts = sorted(rng.randint(_FIRST_START, _LAST_START) for _ in plans)
    return [
        _draft(ns, datetime.combine(day, time(), tzinfo=tz), letter, plan, start, rng, today)
        for letter, plan, start in zip("abc", plans, starts, strict=False)
    ]


def _plans(ns: str, day: date, rng: random.Random) -> list[_Plan]:
    count = rng.choices((0, 1, 2, 3), weights=(25, 40, 25, 10))[0]
    on_beat = day.toordinal() % 3 == 0
    if on_beat:
        count = max(count, 2 if ns == "bob" else 1)
    plans = [_random_plan(ns, rng) for _ in range(count)]
    pinned = _pinned_feature(ns, day)
    if pinned == "continues":
        plans[0] = _Plan("regular", continues=True)
    elif pinned is not None:
        plans[0] = _Plan("foreign" if pinned == "foreign" else "quick")
    if on_beat and ns == "bob":
        plans[-1] = _Plan("subagent")
    return plans


def _random_plan(ns: str, rng: random.Random) -> _Plan:
    roll = rng.random()
    if roll < 0.08:
        return _Plan("foreign")
    if roll < 0.13:
        return _Plan("quick")
    if ns == "bob" and roll < 0.25:
        return _Plan("subagent")
    return _Plan("regular", continues=rng.random() < 0.15)


def _pinned_feature(ns: str, day: date) -> str | None:
    ordinal = day.toordinal()
    if ordinal % 3:
        return None
    beat = ordinal // 3
    return _PINNED[beat % 3] if NAMESPACES[(beat // 3) % 3] == ns else None


def _draft(
    ns: str,
    midnight: datetime,
    letter: str,
    plan: _Plan,
    start: int,
    rng: random.Random,
    today: date,
) -> _Draft:
    """One session of ``ns`` starting ``start`` seconds after the ``midnight`` that
    begins its day (the next day's part too, unless that day is after ``today``)."""
    day = midnight.date()
    topic = _topic(ns, plan, rng)
    slots = _slots(rng)
    kind: SessionKind = "group" if ns == "team-atlas" else "direct"
    if plan.style == "subagent":
        kind = "subagent"
    title = topic.title.format_map(slots) if topic.title else None
    session = SessionRecord(
        id=f"{ns}-{day.isoformat()}-{letter}",
        namespace=ns,
        agent=_AGENT[ns],
        kind=kind,
        title=title,
    )
    messages = _messages(session, _script(topic, plan, rng), slots, midnight, start, rng)
    if plan.continues and day < today:
        # The next day is drawn from its own seed: the day itself stays as it was.
        later = _rng(ns, day.isoformat(), letter, "next")
        start_next = later.randint(7 * 3600 + 1800, 12 * 3600)
        messages += _messages(
            session,
            list(topic.followup),
            slots,
            midnight + timedelta(days=1),  # wall-clock arithmetic: the next midnight
            start_next,
            later,
            first=len(messages) + 1,
        )
    return _Draft(f"{ns}/{day.isoformat()}-{letter}.jsonl", session, messages)


def _topic(ns: str, plan: _Plan, rng: random.Random) -> Topic:
    pools: dict[Style, tuple[Topic, ...]] = {
        "regular": _REGULAR[ns],
        "foreign": corpus.FOREIGN[ns],
        "quick": corpus.QUICK[ns],
        "subagent": corpus.BOB_SUBAGENT,
    }
    pool = pools[plan.style]
    if plan.continues:
        pool = tuple(topic for topic in pool if topic.followup)
    return rng.choice(pool)


def _slots(rng: random.Random) -> dict[str, str]:
    slots = {key: rng.choice(values) for key, values in corpus.SLOTS.items()}
    team = rng.sample(corpus.TEAM, rng.choice((3, 4)))
    slots.update({f"u{i}": team[i % len(team)] for i in range(4)})
    return slots


def _script(topic: Topic, plan: _Plan, rng: random.Random) -> list[Turn]:
    turns = list(topic.turns)
    if plan.style in ("regular", "foreign"):
        turns = turns[: rng.randint(min(4, len(turns)), len(turns))]
    if topic.final:
        turns += rng.choice(topic.final)
    return turns


def _messages(
    session: SessionRecord,
    turns: list[Turn],
    slots: dict[str, str],
    midnight: datetime,
    start: int,
    rng: random.Random,
    *,
    first: int = 1,
) -> list[MessageRecord]:
    roles = [_speaker(code, session, slots) for code, _ in turns]
    gaps = [_gap(role, rng) for role, _ in roles[1:]]
    offsets = itertools.accumulate(gaps, initial=min(start, _DAY_END - sum(gaps)))
    rows = zip(roles, turns, offsets, strict=True)
    return [
        message_at(
            midnight + timedelta(days=1),  # the demo's day is its now, whatever today is
            id=f"m{first + i}",
            role=role,
            speaker=speaker,
            content=template.format_map(slots),
            timestamp=midnight + timedelta(seconds=offset),
        )
        for i, ((role, speaker), (_, template), offset) in enumerate(rows)
    ]


def _speaker(code: str, session: SessionRecord, slots: dict[str, str]) -> tuple[Role, str]:
    if code.startswith("t:"):
        return "tool", code[2:]
    subagent = session.kind == "subagent"
    if code == "a":
        return "assistant", f"{session.agent}-worker" if subagent else session.agent
    if code == "u":
        return "user", session.agent if subagent else _USER[session.namespace]
    return "user", slots[code]


def _gap(role: Role, rng: random.Random) -> int:
    if role == "user":
        return rng.randint(40, 240)
    return rng.randint(2, 30) if role == "tool" else rng.randint(5, 50)


def _session_line(session: SessionRecord) -> str:
    return _dumps({"type": "session", **session.model_dump(exclude_none=True)})


def _message_line(message: MessageRecord, **override: Any) -> str:
    fields = {"type": "message", **message.model_dump(), **override}
    fields["timestamp"] = override.get("timestamp", message.timestamp.isoformat())
    return _dumps({key: value for key, value in fields.items() if value is not None})


def _dumps(fields: dict[str, Any]) -> str:
    return json.dumps(fields, ensure_ascii=False)


def _add_bad_lines(lines: dict[str, list[str]], drafts: dict[str, _Draft]) -> None:
    """Put the deliberate bad lines into the latest file of each namespace."""
    if not lines:
        return
    latest = {
        ns: max((n for n in lines if n.startswith(f"{ns}/")), default=None) for ns in NAMESPACES
    }
    fallback = max(lines)
    extra: dict[str, int] = {}
    for ns, bad in (("alice", "json"), ("team-atlas", "time"), ("bob", "content"), ("bob", "dup")):
        name = latest[ns] or fallback
        draft, n = drafts[name], extra.get(name, 0) + 1
        extra[name] = n
        line = _bad_line(bad, draft.messages, len(draft.messages) + n, n)
        # The broken line sits mid-file, so a reader must carry on past it.
        lines[name].insert(2 if bad == "json" else len(lines[name]), line)


def _bad_line(bad: str, messages: list[MessageRecord], number: int, minutes: int) -> str:
    first, last = messages[0], messages[-1]
    later = (last.timestamp + timedelta(minutes=minutes)).isoformat()
    if bad == "json":
        return f'{{"type": "message", "id": "m{number}", "role": "user", "content": "I was go'
    if bad == "time":
        return _message_line(last, id=f"m{number}", timestamp="yesterday-ish")
    if bad == "content":
        return _message_line(last, id=f"m{number}", content=None, timestamp=later)
    return _message_line(first, content=f"Sending this again: {first.content}", timestamp=later)
