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


def test_a_flush_writes_only_at_the_end_and_reads_only_the_tail(tmp_path: Path) -> None:
    # A year of history before: the file is not replaced (same inode), its earlier bytes
    # stay as they were, and the new line follows them.
    root = root_at(tmp_path)
    path = tmp_path / "acme/timeline.jsonl"
    history = [session_line(f"old{n}", f"Day {n}") for n in range(5000)]
    append_to_file(root, "acme/timeline.jsonl", history)
    before, inode = path.read_bytes(), path.stat().st_ino

    assert append_to_file(root, "acme/timeline.jsonl", [session_line("new", "Today")]) == 1

    after = path.read_bytes()
    assert path.stat().st_ino == inode
    assert after.startswith(before)
    assert [line["session"] for line in read_lines(path)][-2:] == ["old4999", "new"]


def test_lines_a_killed_flush_wrote_are_not_written_twice(tmp_path: Path) -> None:
    # The flush appended two lines and died before marking them written: the next flush
    # gets all three pending again and adds only the third.
    root = root_at(tmp_path)
    path = tmp_path / "acme/timeline.jsonl"
    append_to_file(root, "acme/timeline.jsonl", [session_line(f"old{n}", "x") for n in range(50)])
    pending = [session_line("a", "A"), session_line("b", "B"), session_line("c", "C")]
    append_to_file(root, "acme/timeline.jsonl", pending[:2])

    assert append_to_file(root, "acme/timeline.jsonl", pending) == 1

    sessions = [line["session"] for line in read_lines(path)]
    assert sessions[-3:] == ["a", "b", "c"] and len(sessions) == 53


def test_a_line_torn_by_a_crash_is_written_again_whole(tmp_path: Path) -> None:
    root = root_at(tmp_path)
    path = tmp_path / "acme/timeline.jsonl"
    append_to_file(root, "acme/timeline.jsonl", [session_line("s1", "Trip")])
    torn = session_line("s2", "Dentist ünïcode")
    whole = torn[1].encode("utf-8")
    with path.open("ab") as handle:  # the machine stopped inside a multi-byte character
        handle.write(whole[: whole.index("ü".encode()) + 1])

    assert append_to_file(root, "acme/timeline.jsonl", [torn]) == 1

    assert [line["session"] for line in read_lines(path)] == ["s1", "s2"]
