"""``timeline.jsonl`` on real files: lines appended once each, a session's lines cut out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem

from storage.kernel.errors import StorageError
from tasks.files import MemoryRoot, append_to_file, drop_session_lines, timeline_line
from tests.tasks.files.writers import PausedWriter, temporaries


def root_at(tmp_path: Path) -> MemoryRoot:
    return MemoryRoot(LocalFileSystem(), str(tmp_path))


def session_line(session: str, title: str) -> tuple[str, str]:
    key = f"session:{session}@0123456789abcdef"
    event = {"event": "session", "session": session, "title": title, "topics": ["ünïcode"]}
    return key, timeline_line(key, event)


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_lines_are_appended_once_each_as_valid_json_lines(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    first, second = session_line("s1", "Trip"), session_line("s2", "Dentist")

    assert append_to_file(root, "acme/timeline.jsonl", [first]) == 1
    assert append_to_file(root, "acme/timeline.jsonl", [first, second]) == 1  # s1 was there

    body = (tmp_path / "acme/timeline.jsonl").read_text("utf-8")
    assert body.endswith("}\n") and "\n\n" not in body
    assert [line["block"] for line in read_lines(tmp_path / "acme/timeline.jsonl")] == [
        first[0],
        second[0],
    ]
    assert '"topics": ["ünïcode"]' in body  # UTF-8, not \\u escapes
    assert body.splitlines()[0] == json.dumps(
        json.loads(first[1]), sort_keys=True, ensure_ascii=False
    )


def test_a_file_edited_to_end_without_a_newline_still_gets_whole_lines(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    path = tmp_path / "acme/timeline.jsonl"
    path.parent.mkdir()
    path.write_text('{"event": "note", "text": "added by hand"}')

    append_to_file(root, "acme/timeline.jsonl", [session_line("s1", "Trip")])

    assert [line["event"] for line in read_lines(path)] == ["note", "session"]


def test_a_title_quoting_a_block_key_does_not_pass_for_that_block(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    target = session_line("s2", "Dentist")
    lookalike = session_line("s1", f'"block": "{target[0]}"')

    append_to_file(root, "acme/timeline.jsonl", [lookalike])

    assert append_to_file(root, "acme/timeline.jsonl", [target]) == 1


def test_dropping_a_session_keeps_every_other_line(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    gone, kept = session_line("s1", "Secret trip"), session_line("s2", "Dentist")
    forget = (
        "forget-session:s1@x",
        timeline_line("forget-session:s1@x", {"event": "forget-session", "session": "s1"}),
    )
    append_to_file(root, "acme/timeline.jsonl", [gone, kept, forget])

    assert drop_session_lines(root, "acme", "s1") == 1

    lines = read_lines(tmp_path / "acme/timeline.jsonl")
    assert [line["block"] for line in lines] == [kept[0], forget[0]]
    assert "Secret trip" not in (tmp_path / "acme/timeline.jsonl").read_text("utf-8")
    assert drop_session_lines(root, "acme", "s1") == 0
    assert drop_session_lines(root, "nobody", "s1") == 0


def test_dropping_refuses_a_line_it_cannot_read(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    append_to_file(root, "acme/timeline.jsonl", [session_line("s1", "Secret trip")])
    path = tmp_path / "acme/timeline.jsonl"
    path.write_text(path.read_text() + "s1 Secret trip, edited by hand\n")

    with pytest.raises(StorageError, match=r"timeline.jsonl line 2 is not JSON"):
        drop_session_lines(root, "acme", "s1")


def test_dropping_sweeps_the_copy_a_killed_write_left(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    path = tmp_path / "acme/timeline.jsonl"
    append_to_file(root, "acme/timeline.jsonl", [session_line("s2", "Dentist")])
    with PausedWriter(path, session_line("s1", "Secret trip")[1] + "\n") as writer:
        writer.kill()
    assert len(temporaries(path.parent)) == 1

    drop_session_lines(root, "acme", "s1")

    assert temporaries(path.parent) == []
    assert all("Secret trip" not in p.read_text() for p in path.parent.iterdir())
