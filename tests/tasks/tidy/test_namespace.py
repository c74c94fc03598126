"""The weekly tidy of one namespace on the real store, real files and a local S3 server."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import s3fs
from fsspec.implementations.local import LocalFileSystem
from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.facts import statement
from storage.server.engine import Store
from tasks.files import MemoryRoot, open_memory_root
from tasks.tidy import TidyContext, make_context, merge_logs, tidy_namespace
from tests.helpers import add_session, chat, run_sync
from tests.storage.memory_factory import put
from tests.tasks.files.writers import PausedWriter, temporaries

AS_OF = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)  # a Sunday; its week's Monday is the 16th
DAY = datetime(2026, 11, 19, 10, 0, tzinfo=UTC)


class CountingEmbedder(HashingEmbedder):
    """The offline embedder, remembering which texts it was asked to embed."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return super().embed(texts)


def context(store: Store, as_of: datetime = AS_OF, **kw: Any) -> TidyContext:
    embedder = CountingEmbedder(store.settings.embedding.dim)
    return make_context(store.settings, embedder, as_of, **kw)


def memory_md(store: Store, namespace: str = "alice") -> Path:
    return Path(store.settings.memory_root_url) / namespace / "MEMORY.md"


def trace_ids(document: str) -> set[int]:
    ids: set[int] = set()
    for body in re.findall(r"<!-- m:([0-9,\-]+)", document):
        for part in body.split(","):
            low, _, high = part.partition("-")
            ids.update(range(int(low), int(high or low) + 1))
    return ids


def rows(store: Store, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def seed(store: Store) -> None:
    put(store, "alice", ["Alice prefers window seats on long flights"], DAY, kind="preference")
    put(store, "alice", ["alice prefers WINDOW seats, on long flights!"], DAY, kind="fact")
    put(store, "alice", ["We book TAP for the Lisbon trip"], DAY, kind="decision", importance=0.9)
    put(store, "alice", ["Dentist appointment on Tuesday at 9"], DAY, kind="fact")
    put(store, "alice", ["A turn is never a candidate"], DAY, kind="turn")
    put(store, "bob", ["Bob's deploy runs on Fridays"], DAY, kind="fact")


def test_memory_md_lines_trace_to_memories_of_the_namespace(store: Store) -> None:
    seed(store)
    outcome = tidy_namespace(
        store.engine, open_memory_root(store.settings), context(store), "alice"
    )

    body = memory_md(store).read_text("utf-8")
    assert outcome.memory_md == "written" and len(outcome.entered) == 3
    assert body.startswith("# Long-term memory · alice · week of 2026-11-16\n")
    assert "A turn is never" not in body and "Bob" not in body
    ids = trace_ids(body)
    found = rows(
        store, "SELECT id, namespace, kind FROM memories WHERE id = ANY(:ids)", ids=list(ids)
    )
    assert len(found) == len(ids) and {r[1] for r in found} == {"alice"}
    assert "long_term" not in {r[2] for r in found}
    entries = rows(
        store, "SELECT text, memory_ids, status FROM long_term_entries WHERE namespace = 'alice'"
    )
    merged = [e for e in entries if "window seats" in e[0]]
    assert len(entries) == 3 and len(merged) == 1 and len(merged[0][1]) == 2
    long_term = rows(store, "SELECT content FROM memories WHERE kind = 'long_term'")
    assert sorted(r[0] for r in long_term) == sorted(e[0] for e in entries)


def test_rerun_changes_nothing_and_embeds_nothing(store: Store) -> None:
    seed(store)
    root = open_memory_root(store.settings)
    tidy_namespace(store.engine, root, context(store), "alice")
    before = memory_md(store).read_bytes()
    snapshot = rows(store, "SELECT id, kind, content FROM memories ORDER BY id")
    entries = rows(store, "SELECT * FROM long_term_entries ORDER BY entry_key")

    again = context(store)
    outcome = tidy_namespace(store.engine, root, again, "alice")

    assert memory_md(store).read_bytes() == before
    assert outcome.entered == [] and outcome.left == [] and outcome.kept == 3
    assert outcome.memory_md == "unchanged" and outcome.embedded == 0
    assert again.embedder.texts == []  # type: ignore[attr-defined]
    assert rows(store, "SELECT id, kind, content FROM memories ORDER BY id") == snapshot
    assert rows(store, "SELECT * FROM long_term_entries ORDER BY entry_key") == entries


def test_next_week_reports_what_entered_and_left(store: Store) -> None:
    store.settings.tidy.max_lines = 5  # header, blank, one section title and two lines
    put(store, "alice", ["Old fact one about gardening", "Old fact two about cooking"], DAY)
    root = open_memory_root(store.settings)
    tidy_namespace(store.engine, root, context(store), "alice")
    later = AS_OF + timedelta(days=7)
    put(store, "alice", ["New fact about sailing"], later - timedelta(hours=2), importance=1.0)

    outcome = tidy_namespace(store.engine, root, context(store, later), "alice")

    sailing = rows(store, "SELECT id FROM memories WHERE content = 'New fact about sailing'")
    assert outcome.entered == [(sailing[0][0],)] and len(outcome.left) == 1
    assert "sailing" not in str(outcome) and "gardening" not in str(outcome)  # ids, no text
    assert "New fact about sailing" in memory_md(store).read_text()
    assert memory_md(store).read_text().count("\n") <= 5
    out = rows(store, "SELECT status, memory_id FROM long_term_entries WHERE status = 'out'")
    assert out == [("out", None)]
    assert len(rows(store, "SELECT id FROM memories WHERE kind = 'long_term'")) == 2


def test_nothing_selected_keeps_the_previous_file(store: Store) -> None:
    seed(store)
    root = open_memory_root(store.settings)
    tidy_namespace(store.engine, root, context(store), "alice")
    before = memory_md(store).read_bytes()
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM memories WHERE namespace = 'alice'"))

    outcome = tidy_namespace(store.engine, root, context(store), "alice")

    assert outcome.memory_md.startswith("kept: nothing selected")
    assert memory_md(store).read_bytes() == before


class FailingLocal(LocalFileSystem):  # type: ignore[misc]
    """Writes half of MEMORY.md's temporary file then fails, or fails the rename."""

    def __init__(self, fail: str) -> None:
        super().__init__(skip_instance_cache=True)
        self.fail = fail

    def pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> None:
        if self.fail == "pipe" and "MEMORY.md" in path:
            super().pipe_file(path, value[: len(value) // 2], *args, **kwargs)
            raise OSError(f"disk full writing {path}")
        super().pipe_file(path, value, *args, **kwargs)

    def mv(self, path1: str, path2: str, *args: Any, **kwargs: Any) -> None:
        if self.fail == "mv" and path2.endswith("MEMORY.md"):
            raise OSError(f"rename to {path2} failed")
        super().mv(path1, path2, *args, **kwargs)


@pytest.mark.parametrize("fail", ["pipe", "mv"])
def test_failed_write_leaves_previous_memory_md(store: Store, fail: str) -> None:
    seed(store)
    root = open_memory_root(store.settings)
    tidy_namespace(store.engine, root, context(store), "alice")
    before = memory_md(store).read_bytes()
    later = AS_OF + timedelta(days=7)
    put(store, "alice", ["Brand new goal: run a marathon"], later - timedelta(days=1), kind="goal")
    broken = MemoryRoot(FailingLocal(fail), root.root)

    with pytest.raises(OSError):
        tidy_namespace(store.engine, broken, context(store, later), "alice")

    assert memory_md(store).read_bytes() == before
    outcome = tidy_namespace(store.engine, root, context(store, later), "alice")
    assert outcome.memory_md == "written" and "marathon" in memory_md(store).read_text()


class FailingS3(s3fs.S3FileSystem):  # type: ignore[misc]
    """An upload of MEMORY.md that dies on the wire."""

    def pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> None:
        if path.endswith("MEMORY.md"):
            raise ConnectionError(f"connection reset uploading {path}")
        super().pipe_file(path, value, *args, **kwargs)


def test_on_s3_tidy_writes_moves_and_survives_a_failed_upload(
    store: Store, s3_options: dict[str, Any], s3_bucket: str
) -> None:
    seed(store)
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_options)
    root = MemoryRoot(fs, f"{s3_bucket}/memory")
    fs.pipe_file(root.path("alice/memory/2026-11-18.md"), b"# log\n\n## a\nbody\n")
    fs.pipe_file(root.path("alice/memory/2026-11-22.md"), b"# today\n")

    first = tidy_namespace(store.engine, root, context(store), "alice")
    second = tidy_namespace(store.engine, root, context(store), "alice")

    written = fs.cat_file(root.path("alice/MEMORY.md"))
    assert first.memory_md == "written" and second.memory_md == "unchanged"
    assert fs.cat_file(root.path("alice/memory/archive/2026/2026-11-18.md")) == (
        b"# log\n\n## a\nbody\n"
    )
    assert not fs.exists(root.path("alice/memory/2026-11-18.md"))
    assert fs.exists(root.path("alice/memory/2026-11-22.md"))  # today's log stays
    put(store, "alice", ["A new fact that changes the file"], AS_OF - timedelta(hours=1))
    broken = MemoryRoot(FailingS3(skip_instance_cache=True, **s3_options), root.root)
    with pytest.raises(ConnectionError):
        tidy_namespace(store.engine, broken, context(store), "alice")
    assert fs.cat_file(root.path("alice/MEMORY.md")) == written


def write(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, "utf-8")


def block(key: str, body: str) -> str:
    return f"## 10:00 · {key}\n<!-- archivist:block daily:{key} -->\n\n{body}"


def test_logs_move_to_archive_and_a_half_move_finishes(store: Store) -> None:
    seed(store)
    base = Path(store.settings.memory_root_url) / "alice" / "memory"
    log = "# Memory log\n\n" + block("s1@a", "first") + "\n"
    write(base / "2026-11-17.md", log)
    write(base / "2026-11-18.md", log)
    write(base / "tasks" / "2026-11-19.md", "# Task cards\n\n" + block("t@b", "card") + "\n")
    write(base / "2026-11-22.md", "# today\n")
    write(base / "notes.md", "mine\n")
    # an earlier run copied the 17th but died before deleting it
    write(base / "archive" / "2026" / "2026-11-17.md", log)
    # and the 18th was archived, then a late sync re-created it with one new block
    write(base / "archive" / "2026" / "2026-11-18.md", log)
    write(base / "2026-11-18.md", "# Memory log\n\n" + block("s2@c", "late") + "\n")
    root = open_memory_root(store.settings)

    outcome = tidy_namespace(store.engine, root, context(store), "alice")
    again = tidy_namespace(store.engine, root, context(store), "alice")

    archive = base / "archive" / "2026"
    assert sorted(outcome.logs_moved) == [
        "alice/memory/2026-11-17.md",
        "alice/memory/2026-11-18.md",
        "alice/memory/tasks/2026-11-19.md",
    ]
    assert again.logs_moved == []
    assert (archive / "2026-11-17.md").read_text() == log  # no duplicate block
    merged = (archive / "2026-11-18.md").read_text()
    assert merged.count("daily:s1@a") == 1 and merged.count("daily:s2@c") == 1
    assert (archive / "tasks" / "2026-11-19.md").exists()
    assert sorted(p.name for p in base.glob("*.md")) == ["2026-11-22.md", "notes.md"]


def test_archiving_a_log_leaves_no_copy_a_killed_write_made_of_it(store: Store) -> None:
    seed(store)
    base = Path(store.settings.memory_root_url) / "alice" / "memory"
    log = "# Memory log\n\n" + block("s1@a", "first") + "\n"
    write(base / "2026-11-18.md", log)
    write(base / "tasks" / "2026-11-19.md", "# Task cards\n")
    for path in (base / "2026-11-18.md", base / "tasks" / "2026-11-19.md"):
        with PausedWriter(path, log + "\n" + block("s2@b", "second") + "\n") as writer:
            writer.kill()  # the sync died between writing the copy and renaming it
    assert len(temporaries(base)) == len(temporaries(base / "tasks")) == 1

    outcome = tidy_namespace(
        store.engine, open_memory_root(store.settings), context(store), "alice"
    )

    assert sorted(outcome.logs_moved) == [
        "alice/memory/2026-11-18.md",
        "alice/memory/tasks/2026-11-19.md",
    ]
    assert temporaries(base) == temporaries(base / "tasks") == []
    assert (base / "archive" / "2026" / "2026-11-18.md").read_text() == log


def test_merge_logs_never_duplicates_or_loses_a_block() -> None:
    one, two = block("a@1", "x"), block("b@2", "y")
    assert merge_logs(None, "h\n\n" + one) == "h\n\n" + one
    assert merge_logs("h\n\n" + one + "\n", "h\n\n" + one + "\n") == "h\n\n" + one + "\n"
    both = merge_logs("h\n\n" + one + "\n", "h\n\n" + two + "\n")
    assert both.count("daily:a@1") == 1 and both.count("daily:b@2") == 1
    assert "handwritten" in merge_logs("h\n", "handwritten note")


def test_weekly_summary_from_the_weeks_episodes(store: Store) -> None:
    add_session(
        store,
        "trip",
        "alice",
        chat(
            DAY,
            "I need to book flights to Lisbon for the conference in March.",
            "TAP has a direct flight on Friday morning.",
            "I prefer window seats. Let's go with the TAP one on Friday.",
            "Booked the TAP flight on Friday, window seat 14A.",
        ),
        title="Trip to Lisbon",
    )
    run_sync(store, DAY.replace(hour=23))

    outcome = tidy_namespace(
        store.engine, open_memory_root(store.settings), context(store), "alice"
    )

    assert outcome.weekly_file == "alice/memory/weekly/2026-11-16.md"
    weekly = (Path(store.settings.memory_root_url) / outcome.weekly_file).read_text()
    assert weekly.startswith("# Week of 2026-11-16 · alice")
    assert "Conversations: 1" in weekly and "Top topics:" in weekly
    ids = trace_ids(weekly) | trace_ids(memory_md(store).read_text())
    found = rows(
        store,
        "SELECT count(*) FROM memories WHERE id = ANY(:i) AND namespace = 'alice'",
        i=list(ids),
    )
    assert ids and found == [(len(ids),)]
    assert not (Path(store.settings.memory_root_url) / "alice/memory/2026-11-19.md").exists()
    # What each view quotes, by session: a purge of "trip" finds both.
    recorded = rows(store, "SELECT monday, window_end, timezone, session_ids FROM weekly_summaries")
    assert recorded == [(date(2026, 11, 16), AS_OF, "UTC", ["trip"])]
    sessions = rows(store, "SELECT DISTINCT session_ids FROM long_term_entries")
    assert sessions == [(["trip"],)]


def test_dry_run_writes_nothing(store: Store) -> None:
    seed(store)
    write(Path(store.settings.memory_root_url) / "alice/memory/2026-11-18.md", "# log\n")

    outcome = tidy_namespace(
        store.engine, open_memory_root(store.settings), context(store, dry_run=True), "alice"
    )

    assert outcome.memory_md == "would write" and len(outcome.entered) == 3
    assert outcome.logs_moved == ["alice/memory/2026-11-18.md"]
    assert not memory_md(store).exists()
    assert rows(store, "SELECT count(*) FROM long_term_entries") == [(0,)]
    assert (Path(store.settings.memory_root_url) / "alice/memory/2026-11-18.md").exists()


def test_back_fill_of_an_earlier_week_leaves_memory_md_alone(store: Store) -> None:
    seed(store)
    later = AS_OF + timedelta(days=7)
    put(store, "alice", ["Next week's fact"], later - timedelta(days=1))
    root = open_memory_root(store.settings)
    tidy_namespace(store.engine, root, context(store, later), "alice")
    before = memory_md(store).read_bytes()

    outcome = tidy_namespace(store.engine, root, context(store), "alice")

    assert outcome.memory_md.startswith("left alone: week of 2026-11-23")
    assert memory_md(store).read_bytes() == before


TRIPS = {"cph": ("Copenhagen", "Iberia"), "opo": ("Porto", "TAP")}


def test_each_line_cites_only_messages_that_say_what_it_says(store: Store) -> None:
    for day, (sid, (city, airline)) in enumerate(TRIPS.items()):
        start = DAY + timedelta(days=day)
        turns = chat(
            start,
            f"I need to book flights to {city} for the conference in March.",
            f"{airline} has a direct flight on Friday morning.",
            f"I prefer window seats. Let's go with the {airline} one on Friday.",
            f"Booked the {airline} flight on Friday, window seat 14A.",
        )
        add_session(store, sid, "alice", turns, title=f"Trip to {city}")
        run_sync(store, start.replace(hour=23))

    tidy_namespace(store.engine, open_memory_root(store.settings), context(store), "alice")

    lines = [ln for ln in memory_md(store).read_text("utf-8").splitlines() if ln.startswith("- ")]
    sql = (
        "SELECT m.content, c.session_id, c.content FROM memories m JOIN chat_messages c"
        " ON c.session_id = m.session_id AND c.id = ANY(m.message_ids) WHERE m.id = ANY(:ids)"
    )
    names = [name for pair in TRIPS.values() for name in pair]
    decisions = [ln for ln in lines if ln.startswith("- Alice decided: Let's go with the")]
    assert len(decisions) == 2  # one per trip, not one line citing both
    for line in lines:
        said = {n for n in names if n in line.split("<!--")[0]}
        for memory, session_id, message in rows(store, sql, ids=list(trace_ids(line))):
            # the line says what the memory says, and where it was said at most
            in_statement = {n for n in names if n in statement(memory)}
            assert in_statement <= said <= {n for n in names if n in memory}, (line, memory)
            assert not said or said <= set(TRIPS[session_id]), (line, message)
