"""The sync's ``timeline.jsonl``: a line per session state, exactly once, per namespace, and
gone with a purged session. Real store and files; the sync's steps as plain functions."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.records import MessageRecord
from storage.kernel.shards import Shard
from storage.pseudonyms import session_pseudonym
from storage.server.engine import Store
from storage.sessions import record_messages
from tasks.files import open_memory_root
from tasks.privacy import forget, purge_session
from tests.child import PausedChild
from tests.helpers import add_session, chat, files, run_sync
from tests.tasks.aging.helpers import local_cold

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
TRIP = (
    "I need to book flights to Lisbon for the conference in March.",
    "Sure. TAP has a direct flight on Friday morning and Iberia one via Madrid.",
    "I prefer window seats. Let's go with the TAP one on Friday.",
    "Booked the TAP flight on Friday, window seat 14A.",
)


def timeline(store: Store, namespace: str) -> list[dict[str, Any]]:
    """The namespace's timeline, each line parsed (fails on a line that is not JSON)."""
    path = Path(store.settings.memory_root_url) / namespace / "timeline.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def rows(store: Store, sql: str, **params: Any) -> list[Any]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def memory_ids(store: Store, session_id: str) -> list[int]:
    found = rows(store, "SELECT id FROM memories WHERE session_id = :s ORDER BY id", s=session_id)
    return [mid for (mid,) in found]


def seed(store: Store, session_id: str, namespace: str, start: datetime = MORNING) -> None:
    add_session(store, session_id, namespace, chat(start, *TRIP), title=f"Trip {session_id}")


def test_one_line_per_session_state_with_its_fields_and_memory_ids(store: Store) -> None:
    seed(store, "trip", "alice")
    add_session(store, "chat", "alice", chat(MORNING + timedelta(hours=2), *TRIP[:3]))

    run_sync(store, AS_OF)

    lines = {line["session"]: line for line in timeline(store, "alice")}
    assert set(lines) == {"trip", "chat"} and len(timeline(store, "alice")) == 2
    trip = lines["trip"]
    (topics, outcomes), *_ = rows(
        store, "SELECT topics, outcomes FROM episodes WHERE session_id = 'trip'"
    )
    assert trip["event"] == "session" and trip["namespace"] == "alice"
    assert trip["started"] == "2026-11-20T09:00:00+00:00"
    assert trip["ended"] == "2026-11-20T09:06:00+00:00"
    assert trip["title"] == "Trip trip" and trip["topics"] == topics
    assert trip["outcomes"] == [{"type": o["type"], "content": o["content"]} for o in outcomes]
    assert trip["memory_ids"] == memory_ids(store, "trip")
    assert lines["chat"]["memory_ids"] == memory_ids(store, "chat")
    assert trip["as_of"] == "2026-11-20T23:00:00+00:00" and trip["run"] is None
    assert trip["block"].startswith("session:trip@")
    written = rows(
        store, "SELECT content FROM memory_file_blocks WHERE block_key = :k", k=trip["block"]
    )
    assert json.loads(written[0][0]) == trip  # the line is the outbox row, as committed


def test_a_rerun_appends_nothing_and_a_new_state_appends_one_line(store: Store) -> None:
    seed(store, "trip", "alice")
    run_sync(store, AS_OF)
    path = Path(store.settings.memory_root_url) / "alice/timeline.jsonl"
    before = path.read_bytes()

    again = run_sync(store, AS_OF)

    assert again.written.sessions == 0 and path.read_bytes() == before
    later = MORNING + timedelta(hours=3)
    message = MessageRecord(
        id="m9", role="user", speaker="Alice", content="Actually make it Saturday.", timestamp=later
    )
    with Session(store.engine) as session, session.begin():
        record_messages(session, "trip", [message])
    run_sync(store, AS_OF)

    first, second = timeline(store, "alice")
    assert path.read_bytes().startswith(before)  # append-only: the first line stays
    assert first["state"] != second["state"] and second["ended"] == later.isoformat()
    assert second["memory_ids"] == memory_ids(store, "trip")


def test_look_alike_namespaces_each_get_only_their_own_lines(store: Store, tmp_path: Path) -> None:
    seed(store, "a1", "acme")
    seed(store, "a2", "acme2")
    seed(store, "a3", "acme", MORNING + timedelta(hours=1))
    run_sync(store, AS_OF)
    root = open_memory_root(store.settings)

    assert [(line["namespace"], line["session"]) for line in timeline(store, "acme")] == [
        ("acme", "a1"),
        ("acme", "a3"),
    ]
    assert [line["session"] for line in timeline(store, "acme2")] == ["a2"]

    purge_session(store.engine, local_cold(tmp_path), root, "a1", actor="test")
    assert [line["session"] for line in timeline(store, "acme2")] == ["a2"]
    forget(store.engine, local_cold(tmp_path), root, "acme", actor="test")

    assert not (Path(root.root) / "acme").exists()
    assert [line["session"] for line in timeline(store, "acme2")] == ["a2"]


def test_a_shard_writes_only_its_namespaces_timelines(store: Store) -> None:
    names = ["acme", "acme2", "beta", "gamma", "delta"]
    for i, namespace in enumerate(names):
        seed(store, f"s{i}", namespace, MORNING + timedelta(minutes=i))
    shard = Shard(1, 2)

    run_sync(store, AS_OF, shard=shard)

    root = Path(store.settings.memory_root_url)
    written = {p.parent.name for p in root.glob("*/timeline.jsonl")}
    assert written == {ns for ns in names if shard.holds(ns)} and written != set(names)
    run_sync(store, AS_OF, shard=Shard(2, 2))
    assert {p.parent.name for p in root.glob("*/timeline.jsonl")} == set(names)


def test_purge_leaves_no_text_of_the_session_in_the_timeline(store: Store, tmp_path: Path) -> None:
    add_session(
        store,
        "secret",
        "alice",
        chat(MORNING, "Plan the Zanzibar surprise for Maria.", "Sure.", "Let's go with Zanzibar."),
        title="Zanzibar surprise",
    )
    seed(store, "trip", "alice", MORNING + timedelta(hours=1))
    run_sync(store, AS_OF)
    path = Path(store.settings.memory_root_url) / "alice/timeline.jsonl"
    assert "Zanzibar" in path.read_text("utf-8")
    when = AS_OF + timedelta(days=1)

    counts = purge_session(
        store.engine,
        local_cold(tmp_path),
        open_memory_root(store.settings),
        "secret",
        actor="test",
        as_of=when,
    )

    body = path.read_text("utf-8")
    assert counts["timeline_lines_removed"] == 1
    assert "Zanzibar" not in body and "Maria" not in body
    trip, gone = timeline(store, "alice")
    assert trip["session"] == "trip"
    with Session(store.engine) as session, session.begin():
        label = session_pseudonym(session, "alice", "secret")  # never the id a user chose
    assert gone == {
        "event": "forget-session",
        "namespace": "alice",
        "session": label,
        "as_of": when.isoformat(),
        "block": f"forget-session:{label}@{when.isoformat()}",
    }
    assert "secret" not in body
    assert (
        rows(store, "SELECT block_key FROM memory_file_blocks WHERE content LIKE '%Zanzibar%'")
        == []
    )


# The sync in a child process that stops at ``pause`` and waits, to be killed there: after
# the batches committed (nothing in the files), after the first file of the flush, or after
# every file was appended and none marked written.
PAUSED_SYNC = """
import sys
from datetime import datetime
from sqlalchemy.orm import Session
from storage.blocks import pending_blocks
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tasks.files import append_to_file, flush_blocks, open_memory_root
from tests.helpers import run_sync

url, root, as_of, pause = sys.argv[1:5]
store = open_store(Settings(database_url=url, memory_root=root, data_dir=root))
memory = open_memory_root(store.settings)

def wait(*_):
    print("paused", flush=True)
    sys.stdin.readline()

run_sync(store, datetime.fromisoformat(as_of), batch_size=3, flush=False)
if pause == "committed":
    wait()
elif pause == "mid-flush":
    flush_blocks(store.engine, memory, on_file=wait)
else:
    with Session(store.engine) as session:
        for block in pending_blocks(session):
            append_to_file(memory, block.path, [(block.block_key, block.content)])
    wait()
"""


@pytest.mark.parametrize("pause", ["committed", "mid-flush", "appended-not-marked"])
def test_a_sync_killed_anywhere_leaves_every_timeline_line_exactly_once(
    new_store: Callable[[str], Store], pause: str
) -> None:
    clean, killed = new_store("clean"), new_store("killed")
    for s in (clean, killed):
        for i in range(12):
            seed(s, f"s{i:02}", f"ns{i % 3}", MORNING + timedelta(minutes=10 * i))
    run_sync(clean, AS_OF)
    url = killed.engine.url.render_as_string(hide_password=False)
    root = killed.settings.memory_root_url
    with PausedChild(PAUSED_SYNC, url, root, AS_OF.isoformat(), pause) as child:
        assert child.first_line == "paused\n"
        child.kill()

    run_sync(killed, AS_OF)

    for namespace in ("ns0", "ns1", "ns2"):
        lines = timeline(killed, namespace)  # every line parses
        keys = [line["block"] for line in lines]
        assert len(keys) == len(set(keys)) == 4  # each once, every processed session
        processed = rows(
            killed,
            "SELECT p.session_id FROM processed_sessions p JOIN chat_sessions s "
            "ON s.id = p.session_id WHERE s.namespace = :ns ORDER BY 1",
            ns=namespace,
        )
        assert sorted(line["session"] for line in lines) == [sid for (sid,) in processed]
        assert all(line["memory_ids"] == memory_ids(killed, line["session"]) for line in lines)
    assert files(Path(root), drop_ids=True) == files(
        Path(clean.settings.memory_root_url), drop_ids=True
    )
