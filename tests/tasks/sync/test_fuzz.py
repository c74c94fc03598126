"""Hostile and random input through the transcript load and the write queue.

A seeded generator writes transcripts and queue payloads that mix valid records (any
script, control characters, Unicode separators, a message of exactly the size limit, times
at the window's edges) with hostile ones: NUL, lone surrogates, 10 MB strings, JSON nested
100,000 deep, wrong types, bytes that are not UTF-8, times outside the window or as
numbers, NUL and control characters in field names, ids that could break a block marker.
The values come from ``tests.fuzz_values``, which the API's and MCP's fuzz tests use too.
Each record's fate is known when it is made, so the test checks that every valid record is
stored, every invalid one is reported where it is, nothing raises, and the namespace's
search and priming still answer.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import fsspec
import pytest
from click.testing import CliRunner
from sqlalchemy import text

from deployments.cli import main
from storage.embedding import HashingEmbedder
from storage.kernel.settings import Settings
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.sync import JsonlTranscripts, ingest
from tests.fuzz_values import (
    BAD_IDS,
    BAD_KEYS,
    BAD_TEXTS,
    BAD_TIMES,
    FORGED_TITLE,
    VALID_IDS,
    VALID_TIMES,
    valid_text,
)
from tests.helpers import run_sync

SEED = 16
AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "x" * 10_000_000

# A message field made bad, and how it is written into the line (raw JSON, a value, or a
# field of that name added).
HOSTILE: list[tuple[str, str, object]] = [
    *[("content", "value", v) for v in BAD_TEXTS],
    ("content", "value", HUGE),
    ("content", "raw", DEEP),
    ("speaker", "value", "nul\x00speaker"),
    ("speaker", "value", ""),
    ("role", "value", "narrator"),
    *[("timestamp", "value", v) for v in BAD_TIMES],
    *[("id", "value", v) for v in BAD_IDS],
    *[(key, "key", 1) for key in BAD_KEYS],
]


@dataclass
class Made:
    """The files written and what each record should become."""

    stored: set[tuple[str, str, str]] = field(default_factory=set)
    bad: set[tuple[str, int]] = field(default_factory=set)


def _message(sid: str, mid: str, content: object, rng: random.Random) -> dict[str, object]:
    minute = rng.randint(0, 59)
    return {
        "type": "message",
        "id": mid,
        "role": rng.choice(["user", "assistant", "tool", "system"]),
        "speaker": f"speaker {sid}",
        "content": content,
        "timestamp": f"2026-11-20T09:{minute:02d}:00+01:00",
    }


def _hostile_line(base: dict[str, object], rng: random.Random) -> bytes:
    if rng.random() < 0.1:
        return b'{"type": "message", "id": "\xff\xfe", "content": "not utf-8"}'
    name, how, value = rng.choice(HOSTILE)
    if how == "key":  # a field of a hostile name: the key is what is wrong
        return json.dumps(base | {name: value}).encode()
    if how == "raw":
        marker = "__RAW__"
        return json.dumps(base | {name: marker}).replace(f'"{marker}"', str(value)).encode()
    return json.dumps(base | {name: value}).encode()


def write_files(root: Path, rng: random.Random, files: int) -> Made:
    made = Made()
    for f in range(files):
        sid, name = f"s{f}", f"f{f:03d}.jsonl"
        header: dict[str, object] = {"type": "session", "id": sid, "namespace": "fuzz"}
        header |= {"agent": "aria", "title": rng.choice([valid_text(rng), FORGED_TITLE])}
        header_bad = rng.random() < 0.15
        if header_bad:
            header |= rng.choice(
                [
                    {"title": "t\x00"},
                    {"namespace": "bob\n"},
                    {"agent": 7},
                    {"id": rng.choice(BAD_IDS)},
                    {rng.choice(BAD_KEYS): "x"},
                ]
            )
        lines = [json.dumps(header).encode()]
        good: set[tuple[str, str, str]] = set()
        bad: set[tuple[str, int]] = set()
        for m in range(rng.randint(1, 8)):
            mid = rng.choice(VALID_IDS[:-1]) + f"-{m}" if rng.random() < 0.2 else f"m{m}"
            base = _message(sid, mid, valid_text(rng), rng)
            if rng.random() < 0.15:  # a time at the window's edges, or in another zone
                base["timestamp"] = rng.choice(VALID_TIMES)
            if f == 0 and m == 0:
                base["content"] = "y" * 1_000_000  # exactly the limit: valid
            if rng.random() < 0.4:
                lines.append(_hostile_line(base, rng))
                bad.add((name, len(lines)))
            else:
                lines.append(json.dumps(base).encode())
                good.add((sid, mid, str(base["content"])))
        # A bad session line skips the file, reported once at line 1.
        made.bad |= {(name, 1)} if header_bad else bad
        made.stored |= set() if header_bad else good
        (root / name).write_bytes(b"\n".join(lines) + b"\n")
    return made


def test_ingest_stores_every_valid_record_and_reports_every_invalid_one(
    store: Store, tmp_path: Path
) -> None:
    made = write_files(tmp_path, random.Random(SEED), files=40)
    assert len(made.stored) > 50 and len(made.bad) > 30  # the generator made both kinds

    report = ingest(store.engine, JsonlTranscripts(fsspec.filesystem("file"), str(tmp_path)))

    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT session_id, id, content FROM chat_messages")).all()
    assert {tuple(r) for r in rows} == made.stored
    reported = {(Path(p.file).name, p.line) for p in report.problems}
    assert reported == made.bad
    assert report.messages == len(made.stored)
    # What was stored is any text at all: the sync's extraction and indexing take it too.
    synced = run_sync(store, AS_OF, min_user_messages=0)
    assert synced.written.sessions == len({sid for sid, _, _ in made.stored})
    assert synced.written.sessions_refused == 0
    retriever = Retriever(store.engine, HashingEmbedder(store.settings.embedding.dim))
    assert retriever.search("fuzz", "plain words", as_of=AS_OF, record_access=False)
    assert retriever.prime("fuzz", "Grüße", as_of=AS_OF, record_access=False).episodes


def _payloads(rng: random.Random) -> list[tuple[str, str, bool]]:
    """(op, payload text, valid?) for the queue."""
    good = [
        ("ADD_MEMORY", json.dumps({"content": valid_text(rng), "kind": "fact"}), True)
        for _ in range(8)
    ]
    good.append(("SAVE_PREFERENCE", json.dumps({"content": "tea\u2028green"}), True))
    good += [
        ("ADD_MEMORY", json.dumps({"content": valid_text(rng), "occurred_at": at}), True)
        for at in VALID_TIMES
    ]
    good += [
        ("ADD_MEMORY", json.dumps({"content": "x", "session_id": sid}), True) for sid in VALID_IDS
    ]
    bad = [
        *[
            ("ADD_MEMORY", json.dumps({"content": "x", "occurred_at": at}), False)
            for at in BAD_TIMES
        ],
        *[
            ("ADD_MEMORY", json.dumps({"content": "x", "session_id": sid}), False)
            for sid in BAD_IDS
        ],
        *[("ADD_MEMORY", json.dumps({"content": "x", key: 1}), False) for key in BAD_KEYS],
        *[("ADD_MEMORY", json.dumps({"content": text}), False) for text in BAD_TEXTS],
        ("ADD_MEMORY", json.dumps({"content": "a\x00b"}), False),
        ("ADD_MEMORY", '{"content": "\\ud800"}', False),
        ("ADD_MEMORY", json.dumps({"content": HUGE}), False),
        ("ADD_MEMORY", '{"content": ' + DEEP + "}", False),
        ("ADD_MEMORY", DEEP, False),
        ("ADD_MEMORY", json.dumps({"content": 5}), False),
        ("ADD_MEMORY", json.dumps(["content"]), False),
        ("ADD_MEMORY", "{not json", False),
        ("ADD_MEMORY", json.dumps({"content": "x", "extra": {"deep": [1, [2]]}}), False),
        ("FORGET_MEMORY", json.dumps({"memory_id": "one"}), False),
        ("FORGET_MEMORY", json.dumps({"memory_id": -3}), False),
        ("UPDATE_GOAL", json.dumps({"content": "   "}), False),
        ("RECORD_MESSAGE", json.dumps({"session": None, "message": []}), False),
    ]
    items = good + bad
    rng.shuffle(items)
    return items


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    assert settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(settings.data_dir))
    return settings


def test_enqueue_takes_every_valid_payload_and_refuses_every_invalid_one_in_one_line(
    cli_env: Settings, store: Store
) -> None:
    items = _payloads(random.Random(SEED))
    outcomes = []
    for op, payload, valid in items:
        result = CliRunner().invoke(main, ["enqueue", "fuzz", op, "--payload", payload])
        outcomes.append((result, valid))

    for result, valid in outcomes:
        assert result.exception is None or isinstance(result.exception, SystemExit)
        if valid:
            assert result.exit_code == 0, result.output
        else:
            assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
            assert result.output.startswith("Error: ") and "Traceback" not in result.output
    with store.engine.connect() as conn:
        queued = conn.execute(text("SELECT count(*) FROM memory_write_queue")).scalar_one()
    assert queued == sum(valid for _, _, valid in items)
