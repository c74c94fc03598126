"""Transcripts loaded with redaction before storage: placeholders stored, counts reported."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
from sqlalchemy import text

from storage.kernel.settings import RedactionSettings
from storage.server.engine import Store
from tasks.sync import JsonlTranscripts, RedactedSource, ingest, stored_source
from tests.tasks.sync.test_transcripts import HEADER, jsonl, msg

PLANTED = ("alice@example.com", "+49 30 12345678", "DE89 3704 0044 0532 0130 00")


def write(root: Path, *lines: object) -> None:
    root.mkdir(exist_ok=True)
    (root / "s1.jsonl").write_text(jsonl(*lines), encoding="utf-8")


def stored(store: Store) -> list[tuple[str, str]]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT id, content FROM chat_messages ORDER BY id")).all()
        title = conn.execute(text("SELECT title FROM chat_sessions")).scalar_one()
    return [("title", title), *((r.id, r.content) for r in rows)]


def test_transcripts_are_stored_redacted_and_a_grown_file_keeps_its_placeholders(
    store: Store, tmp_path: Path
) -> None:
    header = HEADER | {"title": f"Bank details for {PLANTED[0]}"}
    first = [
        msg("m1", f"Mail {PLANTED[0]}, call {PLANTED[1]}."),
        msg("m2", f"IBAN {PLANTED[2]}; mail {PLANTED[0]} again."),
    ]
    write(tmp_path / "t", header, *first)
    fs = fsspec.filesystem("file")
    settings = RedactionSettings(before_storage=True)

    source = stored_source(JsonlTranscripts(fs, str(tmp_path / "t")), settings)
    report = ingest(store.engine, source)

    assert isinstance(source, RedactedSource)
    assert stored(store) == [
        ("title", "Bank details for <EMAIL_1>"),
        ("m1", "Mail <EMAIL_1>, call <PHONE_1>."),
        ("m2", "IBAN <IBAN_1>; mail <EMAIL_1> again."),
    ]
    assert dict(source.counts) == {"email": 3, "phone": 1, "iban": 1}
    assert report.sessions == 1 and "example.com" not in json.dumps(report.as_dict())

    # The file grows by a message with a new address: earlier placeholders stay as they were.
    write(
        tmp_path / "t", header, *first, msg("m3", "Or bob@example.com.", ts="2026-11-20T09:05:00Z")
    )
    ingest(store.engine, stored_source(JsonlTranscripts(fs, str(tmp_path / "t")), settings))
    assert stored(store)[1:] == [
        ("m1", "Mail <EMAIL_1>, call <PHONE_1>."),
        ("m2", "IBAN <IBAN_1>; mail <EMAIL_1> again."),
        ("m3", "Or <EMAIL_2>."),
    ]


def test_by_default_transcripts_are_stored_as_they_are(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "t", HEADER, msg("m1", f"Mail {PLANTED[0]}."))
    source = JsonlTranscripts(fsspec.filesystem("file"), str(tmp_path / "t"))
    assert stored_source(source, RedactionSettings()) is source
    ingest(store.engine, stored_source(source, RedactionSettings()))
    assert stored(store)[1] == ("m1", f"Mail {PLANTED[0]}.")
