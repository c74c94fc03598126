"""The demo's sample conversations: deterministic, valid apart from the deliberate bad lines."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pydantic
import pytest
from fsspec.implementations.local import LocalFileSystem

from storage.kernel.records import MessageRecord, SessionRecord
from tasks.samples import DEMO_BAD_LINES, TranscriptFile, generate_demo, write_transcripts

TODAY = date(2026, 11, 20)
TZ = ZoneInfo("Europe/Berlin")
FOREIGN_MARKERS = ("Hola", "Kannst du", "Können wir", "ローンチ")


@pytest.fixture(scope="module")
def demo() -> list[TranscriptFile]:
    return generate_demo(TODAY, TZ)


def _parse(
    file: TranscriptFile, now: datetime | None = None
) -> tuple[SessionRecord, list[MessageRecord], int]:
    """The session, its valid messages, and how many lines were bad (times checked against
    ``now``, the demo's today, which may be ahead of the real one)."""
    head, *rest = file.text.splitlines()
    fields = json.loads(head)
    assert fields.pop("type") == "session"
    session = SessionRecord.model_validate(fields)
    messages: list[MessageRecord] = []
    bad = 0
    for line in rest:
        try:
            fields = json.loads(line)
            assert fields.pop("type") == "message"
            message = MessageRecord.model_validate(fields, context={"now": now})
        except (json.JSONDecodeError, pydantic.ValidationError):
            bad += 1
            continue
        if message.id in {m.id for m in messages}:
            bad += 1
            continue
        messages.append(message)
    return session, messages, bad


def _day_of(name: str) -> date:
    return date.fromisoformat(name.split("/")[1][:10])


def test_same_inputs_give_identical_bytes(demo: list[TranscriptFile]) -> None:
    assert generate_demo(TODAY, TZ) == demo


def test_moving_today_keeps_earlier_days_identical(demo: list[TranscriptFile]) -> None:
    # The two latest days may change: continuations and the bad lines land there.
    earlier = {f.name: f.text for f in demo if _day_of(f.name) < TODAY - timedelta(days=2)}
    moved = {f.name: f.text for f in generate_demo(TODAY + timedelta(days=1), TZ)}
    shorter = {f.name: f.text for f in generate_demo(TODAY, TZ, days=10)}
    first_day = TODAY - timedelta(days=20)
    assert len(earlier) > 20
    assert {n: t for n, t in earlier.items() if _day_of(n) > first_day} == {
        n: moved[n] for n in earlier if _day_of(n) > first_day
    }
    assert {n: t for n, t in shorter.items() if n in earlier} == {
        n: earlier[n] for n in shorter if n in earlier
    }


def test_only_the_deliberate_lines_are_bad(demo: list[TranscriptFile]) -> None:
    parsed = {f.name: _parse(f) for f in demo}
    assert sum(bad for _, _, bad in parsed.values()) == DEMO_BAD_LINES
    assert 2 <= sum(bad > 0 for _, _, bad in parsed.values()) < DEMO_BAD_LINES
    for name, (session, _, _) in parsed.items():
        assert session.id == name.removesuffix(".jsonl").replace("/", "-")
    assert all(f.text.endswith("\n") and not f.text.endswith("\n\n") for f in demo)


def test_namespaces_kinds_and_languages(demo: list[TranscriptFile]) -> None:
    sessions = [_parse(f)[0] for f in demo]
    assert {(s.namespace, s.kind) for s in sessions} == {
        ("alice", "direct"),
        ("bob", "direct"),
        ("bob", "subagent"),
        ("team-atlas", "group"),
    }
    assert any(marker in f.text for f in demo for marker in FOREIGN_MARKERS)


def test_timestamps_before_the_nightly_cutoff(demo: list[TranscriptFile]) -> None:
    cutoff = datetime.combine(TODAY, time(22), tzinfo=TZ)
    first = datetime.combine(TODAY - timedelta(days=20), time(), tzinfo=TZ)
    stamps = [m.timestamp for f in demo for m in _parse(f)[1]]
    assert all(first <= stamp < cutoff for stamp in stamps)


def test_conversation_shapes(demo: list[TranscriptFile]) -> None:
    parsed = [_parse(f) for f in demo]
    user_counts = [sum(m.role == "user" for m in messages) for _, messages, _ in parsed]
    assert any(count < 2 for count in user_counts)
    assert max(len(messages) for _, messages, _ in parsed) <= 16
    continued = [
        f
        for f, (_, messages, _) in zip(demo, parsed, strict=True)
        if len({m.timestamp.astimezone(TZ).date() for m in messages}) == 2
    ]
    assert continued
    assert max(Counter(f.name[:-8] for f in demo).values()) <= 3


def test_write_transcripts_skips_unchanged_files(
    demo: list[TranscriptFile], tmp_path: Path
) -> None:
    fs = LocalFileSystem()
    root = str(tmp_path / "transcripts")
    assert write_transcripts(fs, root, demo) == len(demo)
    assert write_transcripts(fs, root, demo) == 0
    assert (tmp_path / "transcripts" / demo[0].name).read_text("utf-8") == demo[0].text
    changed = [TranscriptFile(demo[0].name, demo[0].text + "\n"), *demo[1:]]
    assert write_transcripts(fs, root, changed) == 1


@pytest.mark.parametrize(
    ("today", "tz"),
    [
        (date(2026, 3, 29), ZoneInfo("Europe/Berlin")),  # DST starts
        (date(2026, 11, 1), ZoneInfo("America/Los_Angeles")),  # DST ends
        (date(2027, 1, 3), ZoneInfo("Asia/Tokyo")),
        (date(2026, 7, 15), ZoneInfo("UTC")),
    ],
)
def test_any_window_of_nine_days_has_every_feature(today: date, tz: ZoneInfo) -> None:
    files = generate_demo(today, tz, days=9)
    cutoff = datetime.combine(today, time(22), tzinfo=tz)
    parsed = [_parse(f, cutoff) for f in files]
    assert sum(bad for _, _, bad in parsed) == DEMO_BAD_LINES
    assert {s.namespace for s, _, _ in parsed} == {"alice", "bob", "team-atlas"}
    assert {s.kind for s, _, _ in parsed} == {"direct", "group", "subagent"}
    assert all(m.timestamp < cutoff for _, messages, _ in parsed for m in messages)
    assert any(sum(m.role == "user" for m in messages) < 2 for _, messages, _ in parsed)
    assert any(marker in f.text for f in files for marker in FOREIGN_MARKERS)
