"""JSONL transcripts: parsing, bad input reporting, idempotent ingest, local and S3."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import pytest
import s3fs
from sqlalchemy import text

from storage.kernel.errors import InputError
from storage.server.engine import Store
from tasks.sync import JsonlTranscripts, ingest, parse_transcript

MESSAGES = "SELECT session_id, id, content FROM chat_messages ORDER BY 1, 2"
HEADER = {"type": "session", "id": "s1", "namespace": "alice", "agent": "aria", "kind": "direct"}


def msg(
    mid: str, content: str = "hello there", ts: str = "2026-11-20T09:00:00Z", **extra: object
) -> dict[str, object]:
    return {
        "type": "message",
        "id": mid,
        "role": "user",
        "speaker": "Alice",
        "content": content,
        "timestamp": ts,
        **extra,
    }


def jsonl(*objs: object) -> str:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n"


def test_each_bad_line_is_reported_with_its_line_and_the_rest_loaded() -> None:
    missing = msg("m3")
    del missing["content"]
    text_ = jsonl(
        HEADER,
        msg("m1"),
        '{"type": "message", "id": "m2", "role": "user", "speaker"',
        missing,
        msg("m4", ts="yesterday-ish"),
        msg("m1", content="again"),
        msg("m5", ts="2026-11-20T09:05:00"),
        msg("m6", role="robot"),
        "",
        msg("m7", content="kept"),
    )

    transcript, problems = parse_transcript("s1.jsonl", text_)

    assert transcript is not None
    assert [m.id for m in transcript.messages] == ["m1", "m7"]
    assert transcript.messages[0].content == "hello there"  # the first of a duplicate id wins
    reasons = {p.line: p.reason for p in problems}
    assert set(reasons) == {3, 4, 5, 6, 7, 8}
    assert "not valid JSON" in reasons[3]
    assert "missing field 'content'" in reasons[4]
    assert "timestamp" in reasons[5] and "(got text of 13 characters)" in reasons[5]
    assert "duplicate message id (first on line 2)" in reasons[6]
    assert "UTC offset" in reasons[7]
    assert "role" in reasons[8]
    # reports and logs say what a refused value was, never what it said (issue 16, 2)
    assert not any(word in str(problems) for word in ("yesterday-ish", "robot"))
    assert str(problems[0]).startswith("s1.jsonl:3: ")


def test_a_bad_session_line_skips_the_file_and_says_how_many_messages() -> None:
    transcript, problems = parse_transcript(
        "x.jsonl", jsonl({"type": "session", "id": "s1"}, msg("m1"), msg("m2"))
    )

    assert transcript is None
    assert len(problems) == 1 and problems[0].line == 1
    assert "missing field 'namespace'" in problems[0].reason
    assert "2 message lines not loaded" in problems[0].reason


def write(root: Path, name: str, body: str | bytes) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body if isinstance(body, bytes) else body.encode())


def test_ingest_twice_gives_the_same_rows_and_reports_unreadable_files(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "in"
    write(root, "alice/s1.jsonl", jsonl(HEADER, msg("m1"), msg("m2", content="second")))
    write(
        root,
        "bob/s2.jsonl",
        jsonl({**HEADER, "id": "s2", "namespace": "bob"}, msg("m1"), "{broken"),
    )
    write(root, "bad.jsonl", b"\xff\xfe not utf-8")
    write(root, "dupe.jsonl", jsonl(HEADER, msg("m9")))
    fs = fsspec.filesystem("file")

    first = ingest(store.engine, JsonlTranscripts(fs, str(root)))
    with store.engine.connect() as conn:
        rows_1 = [tuple(r) for r in conn.execute(text(MESSAGES))]
    second = ingest(store.engine, JsonlTranscripts(fs, str(root)))
    with store.engine.connect() as conn:
        rows_2 = [tuple(r) for r in conn.execute(text(MESSAGES))]

    assert (
        rows_1
        == rows_2
        == [("s1", "m1", "hello there"), ("s1", "m2", "second"), ("s2", "m1", "hello there")]
    )
    assert (first.sessions, first.messages) == (2, 3)
    reasons = sorted(str(p) for p in first.problems)
    assert len(reasons) == 3
    assert any("bad.jsonl:1: bad session line: not valid UTF-8; file skipped" in r for r in reasons)
    assert any("s2.jsonl:3" in r and "not valid JSON" in r for r in reasons)
    assert any("dupe.jsonl:1" in r and "already loaded" in r for r in reasons)
    assert first.as_dict()["bad_input"] == second.as_dict()["bad_input"] == 3


def test_ingest_from_s3(store: Store, s3_options: dict[str, object], s3_bucket: str) -> None:
    fs = s3fs.S3FileSystem(**s3_options)
    fs.pipe_file(
        f"{s3_bucket}/chats/s1.jsonl",
        jsonl(HEADER, msg("m1"), msg("m2", content="from s3")).encode(),
    )

    report = ingest(store.engine, JsonlTranscripts(fs, f"{s3_bucket}/chats"))

    assert (report.sessions, report.messages, report.problems) == (1, 2, [])
    with store.engine.connect() as conn:
        assert (
            conn.execute(text("SELECT content FROM chat_messages WHERE id = 'm2'")).scalar_one()
            == "from s3"
        )


def test_a_missing_transcripts_folder_is_an_error(tmp_path: Path) -> None:
    source = JsonlTranscripts(fsspec.filesystem("file"), str(tmp_path / "typo"))
    with pytest.raises(InputError, match="does not exist"):
        list(source.read())


def test_characters_postgresql_cannot_store_are_bad_lines_and_the_rest_loads(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "a.jsonl").write_text(
        jsonl(
            HEADER,
            msg("m1"),
            msg("m2", content="a\u0000b"),
            msg("m3", speaker="Al\u0000ice"),
            '{"type": "message", "id": "m4", "role": "user", "speaker": "Alice", '
            '"content": "half \\ud83d", "timestamp": "2026-11-20T09:00:00Z"}',
            msg("m5", content="kept"),
        )
    )
    (tmp_path / "b.jsonl").write_text(jsonl({**HEADER, "id": "s2", "title": "T\u0000"}, msg("m1")))
    (tmp_path / "c.jsonl").write_text(jsonl({**HEADER, "id": "s3"}, msg("m1", content="good")))

    report = ingest(store.engine, JsonlTranscripts(fsspec.filesystem("file"), str(tmp_path)))

    with store.engine.connect() as conn:
        rows = conn.execute(text(MESSAGES)).all()
    assert [(r.session_id, r.id) for r in rows] == [("s1", "m1"), ("s1", "m5"), ("s3", "m1")]
    reasons = {(Path(p.file).name, p.line): p.reason for p in report.problems}
    assert set(reasons) == {("a.jsonl", 3), ("a.jsonl", 4), ("a.jsonl", 5), ("b.jsonl", 1)}
    assert "content: holds a NUL character (U+0000)" in reasons[("a.jsonl", 3)]
    assert "speaker: holds a NUL character" in reasons[("a.jsonl", 4)]
    assert "content: Input should be a valid string" in reasons[("a.jsonl", 5)]
    assert "title: holds a NUL character" in reasons[("b.jsonl", 1)]
    assert "file skipped" in reasons[("b.jsonl", 1)]


def test_lines_split_only_at_newline_so_unicode_separators_stay_in_their_message() -> None:
    separators = "one\u2028two\u2029three\u0085four\x0bfive\x0csix\x1cseven\x1deight\x1e."
    raw = "\r\n".join(
        json.dumps(o, ensure_ascii=False)
        for o in (HEADER, msg("m1", content=separators), msg("m2", role="robot"), msg("m3"))
    )

    transcript, problems = parse_transcript("s1.jsonl", raw)

    assert transcript is not None
    assert [m.id for m in transcript.messages] == ["m1", "m3"]
    assert transcript.messages[0].content == separators
    assert [(p.line, "role" in p.reason) for p in problems] == [(3, True)]


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"])
def test_every_line_end_splits_lines_and_counts_what_a_bad_header_loses(end: str) -> None:
    messages = [json.dumps(msg(f"m{i}")) for i in range(1, 5)]
    good, _ = parse_transcript("s1.jsonl", end.join([json.dumps(HEADER), *messages]))
    bad_header = end.join(["{not json", *messages])
    none, problems = parse_transcript("s1.jsonl", bad_header)

    assert good is not None and [m.id for m in good.messages] == ["m1", "m2", "m3", "m4"]
    assert none is None and [p.line for p in problems] == [1]
    assert problems[0].reason.endswith("file skipped, 4 message lines not loaded")


def test_a_byte_order_mark_is_tolerated_and_bad_utf8_skips_only_its_line(
    store: Store, tmp_path: Path
) -> None:
    lines = [
        json.dumps(o).encode() for o in (HEADER, msg("m1"), msg("m2", content="XX"), msg("m3"))
    ]
    lines[2] = lines[2].replace(b"XX", b"caf\xe9")  # Latin-1, not UTF-8
    (tmp_path / "s1.jsonl").write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")

    report = ingest(store.engine, JsonlTranscripts(fsspec.filesystem("file"), str(tmp_path)))

    with store.engine.connect() as conn:
        assert [r.id for r in conn.execute(text(MESSAGES))] == ["m1", "m3"]
    assert [(p.line, p.reason) for p in report.problems] == [(3, "not valid UTF-8; line skipped")]


def test_a_session_id_of_another_namespace_is_never_moved(store: Store, tmp_path: Path) -> None:
    fs = fsspec.filesystem("file")
    write(tmp_path / "a", "s1.jsonl", jsonl(HEADER, msg("m1", content="alice's words")))
    ingest(store.engine, JsonlTranscripts(fs, str(tmp_path / "a")))
    bob = {**HEADER, "namespace": "bob"}
    write(tmp_path / "b", "s1.jsonl", jsonl(bob, msg("m1", content="bob's words")))
    write(tmp_path / "b", "s2.jsonl", jsonl({**bob, "id": "s2"}, msg("m1")))

    report = ingest(store.engine, JsonlTranscripts(fs, str(tmp_path / "b")))

    assert (report.sessions, report.messages) == (1, 1)
    assert [p.reason for p in report.problems] == [
        "its session id is stored under another namespace; file skipped"
    ]
    with store.engine.connect() as conn:
        owners = conn.execute(text("SELECT id, namespace FROM chat_sessions ORDER BY id")).all()
        rows = [tuple(r) for r in conn.execute(text(MESSAGES))]
    assert [tuple(r) for r in owners] == [("s1", "alice"), ("s2", "bob")]
    assert rows == [("s1", "m1", "alice's words"), ("s2", "m1", "hello there")]


def test_a_session_the_database_refuses_is_reported_and_the_batch_still_loads(
    store: Store, tmp_path: Path
) -> None:
    # A rule the models do not know, enforced by the real database: whatever PostgreSQL
    # refuses costs that one session, never the load.
    with store.engine.begin() as conn:
        conn.execute(
            text("ALTER TABLE chat_messages ADD CONSTRAINT no_pill CHECK (content <> 'pill')")
        )
    for sid in ("s1", "s2", "s3"):
        content = "pill" if sid == "s2" else f"fine {sid}"
        write(tmp_path, f"{sid}.jsonl", jsonl({**HEADER, "id": sid}, msg("m1", content=content)))

    report = ingest(store.engine, JsonlTranscripts(fsspec.filesystem("file"), str(tmp_path)))

    assert (report.files, report.sessions, report.messages) == (3, 2, 2)
    assert [str(p) for p in report.problems] == [
        f"{tmp_path}/s2.jsonl: the database refused it (CheckViolation); file skipped"
    ]
    with store.engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(text(MESSAGES))] == [
            ("s1", "m1", "fine s1"),
            ("s3", "m1", "fine s3"),
        ]
