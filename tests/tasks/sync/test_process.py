"""The daily sync's per-session step, on the real store and real files (no Prefect)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.blocks import pending_blocks
from storage.embedding import HashingEmbedder
from storage.kernel.errors import ConfigurationError
from storage.kernel.records import MessageRecord
from storage.meta import check_compatible
from storage.server.engine import Store
from storage.sessions import record_messages
from tasks.extraction import HeuristicExtractor
from tasks.files import append_to_file, open_memory_root
from tasks.sync import SyncContext, plan_sync, process_isolated
from tests.helpers import add_session, chat, counts, files, run_sync, snapshot

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def memory_root(store: Store) -> Path:
    return Path(store.settings.memory_root_url)


def seed_trip(store: Store, session_id: str = "trip", namespace: str = "alice") -> None:
    add_session(
        store,
        session_id,
        namespace,
        chat(
            MORNING,
            "I need to book flights to Lisbon for the conference in March.",
            "Sure. TAP has a direct flight on Friday morning and Iberia one via Madrid.",
            "I prefer window seats. Let's go with the TAP one on Friday.",
            "Booked the TAP flight on Friday, window seat 14A.",
        ),
        title="Trip to Lisbon",
    )


def markers(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if "archivist:block" in line]


def test_window_and_user_message_filter(store: Store) -> None:
    seed_trip(store)
    add_session(store, "one-question", "alice", chat(MORNING, "What time is it in Tokyo?", "9pm."))
    add_session(
        store,
        "old",
        "alice",
        chat(MORNING - timedelta(days=3), "Old talk here.", "ok", "Another old line."),
    )
    add_session(
        store,
        "future",
        "alice",
        chat(AS_OF + timedelta(hours=1), "Tomorrow's talk.", "ok", "More tomorrow."),
    )

    result = run_sync(store, AS_OF)

    assert result.plan.seen == 2  # "old" is before the window, "future" after as_of
    assert result.plan.skipped_few_user_messages == ("one-question",)
    assert [c.session_id for c in result.plan.to_process] == ["trip"]
    with store.engine.connect() as conn:
        sessions = conn.execute(text("SELECT DISTINCT session_id FROM memories")).scalars().all()
    assert sessions == ["trip"]
    log = memory_root(store) / "alice/memory/2026-11-20.md"
    assert len(markers(log)) == 1 and "trip@" in markers(log)[0]
    assert "Trip to Lisbon" in log.read_text()


def test_window_hours_and_min_user_messages_are_parameters(store: Store) -> None:
    add_session(
        store,
        "old",
        "alice",
        chat(MORNING - timedelta(days=3), "Old talk here.", "ok", "Another old line."),
    )
    add_session(store, "one-question", "alice", chat(MORNING, "What time is it in Tokyo?", "9pm."))

    result = run_sync(store, AS_OF, window_hours=24 * 5, min_user_messages=1)

    assert sorted(c.session_id for c in result.plan.to_process) == ["old", "one-question"]


def test_second_run_writes_nothing(store: Store) -> None:
    seed_trip(store)
    add_session(
        store,
        "bob-chat",
        "bob",
        chat(MORNING, "The deploy failed again.", "Which service?", "The billing API, urgent."),
    )
    first = run_sync(store, AS_OF)
    before = (counts(store), snapshot(store), files(memory_root(store)))

    second = run_sync(store, AS_OF)

    assert first.written.sessions == 2
    assert second.plan.unchanged == ("bob-chat", "trip") or sorted(second.plan.unchanged) == [
        "bob-chat",
        "trip",
    ]
    assert second.written.sessions == 0 and second.flushed.blocks_appended == 0
    assert (counts(store), snapshot(store), files(memory_root(store))) == before


def test_new_message_replaces_memories_and_appends_a_block(store: Store) -> None:
    seed_trip(store)
    run_sync(store, AS_OF)
    with store.engine.connect() as conn:
        kept_id = conn.execute(
            text("SELECT id FROM memories WHERE kind = 'turn' AND message_ids = '{m0}'")
        ).scalar_one()
    log = memory_root(store) / "alice/memory/2026-11-20.md"
    first_text = log.read_text()

    later = MORNING + timedelta(hours=3)
    add_session(
        store,
        "trip",
        "alice",
        [("user", "Also book a hotel near Alfama for three nights.", later)],
        first_index=4,
        title="Trip to Lisbon",
    )
    result = run_sync(store, AS_OF)

    assert result.written.sessions == 1 and result.written.memories_added >= 1
    with store.engine.connect() as conn:
        turns = (
            conn.execute(text("SELECT message_ids[1] FROM memories WHERE kind = 'turn' ORDER BY 1"))
            .scalars()
            .all()
        )
        episodes = conn.execute(text("SELECT count(*) FROM episodes")).scalar_one()
        still_there = conn.execute(
            text("SELECT count(*) FROM memories WHERE id = :i"), {"i": kept_id}
        ).scalar_one()
    assert turns == ["m0", "m1", "m2", "m3", "m4"]  # one turn memory per message, none twice
    assert episodes == 1
    assert still_there == 1  # unchanged memories keep their id (and their access history)
    assert log.read_text().startswith(first_text.rstrip("\n"))  # append-only
    assert len(markers(log)) == 2


def test_assistant_only_tail_is_a_new_state(store: Store) -> None:
    seed_trip(store)
    run_sync(store, AS_OF)
    tail = MORNING + timedelta(hours=1)
    add_session(
        store,
        "trip",
        "alice",
        [("assistant", "Reminder: your passport expires in April, renew it first.", tail)],
        first_index=4,
        title="Trip to Lisbon",
    )

    result = run_sync(store, AS_OF)

    assert result.written.sessions == 1
    with store.engine.connect() as conn:
        found = conn.execute(
            text("SELECT count(*) FROM memories WHERE content LIKE '%passport expires%'")
        ).scalar_one()
    assert found >= 1


def test_edited_message_replaces_its_memory(store: Store) -> None:
    seed_trip(store)
    run_sync(store, AS_OF)
    edited = MessageRecord(
        id="m0",
        role="user",
        speaker="Alice",
        content="I need to book flights to Porto for the conference in March.",
        timestamp=MORNING,
    )
    with Session(store.engine) as session, session.begin():
        record_messages(session, "trip", [edited])

    result = run_sync(store, AS_OF)

    assert result.written.sessions == 1 and result.written.memories_removed >= 1
    with store.engine.connect() as conn:
        rows = (
            conn.execute(
                text("SELECT content FROM memories WHERE kind = 'turn' AND message_ids = '{m0}'")
            )
            .scalars()
            .all()
        )
    assert len(rows) == 1 and "Porto" in rows[0]


def test_backfilling_an_earlier_day_keeps_the_later_state(store: Store) -> None:
    add_session(
        store,
        "long",
        "alice",
        chat(
            MORNING - timedelta(days=1), "Day one: plan the garden.", "Tulips?", "Yes, red tulips."
        ),
    )
    add_session(
        store,
        "long",
        "alice",
        chat(MORNING, "Day two: order the bulbs.", "Done.", "Thanks, great."),
        first_index=3,
    )
    run_sync(store, AS_OF)
    before = snapshot(store)

    earlier = run_sync(store, AS_OF - timedelta(days=1))

    assert earlier.plan.later_state == ("long",)
    assert earlier.written.sessions == 0
    assert snapshot(store) == before


def test_subagent_sessions_write_task_cards_not_log_blocks(store: Store) -> None:
    add_session(
        store,
        "sub-1",
        "bob",
        [
            (
                "user",
                "Run the test suite and fix the failing migration test. Do not touch the API.",
                MORNING,
            ),
            (
                "tool",
                "pytest: 1 failed, 120 passed (tests/test_migrate.py)",
                MORNING + timedelta(minutes=1),
            ),
            (
                "assistant",
                "Fixed storage/migrations/0003.py; all tests pass. Done.",
                MORNING + timedelta(minutes=5),
            ),
            ("user", "Thanks, open a PR.", MORNING + timedelta(minutes=6)),
        ],
        kind="subagent",
        agent="forge",
    )

    run_sync(store, AS_OF)

    cards = memory_root(store) / "bob/memory/tasks/2026-11-20.md"
    body = cards.read_text()
    assert "- Goal: Run the test suite" in body and "- Status:" in body and "- Artifacts:" in body
    assert not (memory_root(store) / "bob/memory/2026-11-20.md").exists()
    with store.engine.connect() as conn:
        kinds = (
            conn.execute(text("SELECT kind FROM memories WHERE session_id = 'sub-1'"))
            .scalars()
            .all()
        )
    assert "task_card" in kinds and "episode" in kinds


def test_namespace_parameter_and_isolation(store: Store) -> None:
    seed_trip(store, "trip", "alice")
    add_session(
        store,
        "bob-chat",
        "bob",
        chat(MORNING, "The deploy failed again.", "Which service?", "The billing API."),
    )

    only_alice = run_sync(store, AS_OF, namespace="alice")

    assert [c.session_id for c in only_alice.plan.to_process] == ["trip"]
    assert not (memory_root(store) / "bob").exists()
    run_sync(store, AS_OF)
    with store.engine.connect() as conn:
        crossed = conn.execute(
            text(
                "SELECT count(*) FROM memories m JOIN chat_sessions s ON s.id = m.session_id "
                "WHERE m.namespace <> s.namespace"
            )
        ).scalar_one()
        per_ns = {
            ns: n
            for ns, n in conn.execute(text("SELECT namespace, count(*) FROM memories GROUP BY 1"))
        }
    assert crossed == 0 and set(per_ns) == {"alice", "bob"}
    assert "billing" not in (memory_root(store) / "alice/memory/2026-11-20.md").read_text()


def test_dry_run_reports_and_writes_nothing(store: Store) -> None:
    seed_trip(store)
    before = counts(store)

    result = run_sync(store, AS_OF, dry_run=True)

    assert result.written.sessions == 1 and result.written.memories_added > 0
    assert counts(store) == before
    assert not memory_root(store).exists()


def test_every_block_traces_to_memories_of_its_session(store: Store) -> None:
    seed_trip(store)
    run_sync(store, AS_OF)
    with store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT b.block_key, count(m.id), cardinality(b.memory_ids) "
                "FROM memory_file_blocks b JOIN memories m "
                "ON m.id = ANY(b.memory_ids) AND m.session_id = 'trip' GROUP BY 1, 3"
            )
        ).all()
    assert rows and all(found == listed for _, found, listed in rows)


class FailingEmbedder(HashingEmbedder):
    """Works for ``calls`` batches, then fails like a dropped connection would."""

    def __init__(self, calls: int) -> None:
        super().__init__(384)
        self.calls = calls

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.calls == 0:
            raise OSError("embedding endpoint went away")
        self.calls -= 1
        return super().embed(texts)


def seed_many(store: Store) -> None:
    for i in range(6):
        add_session(
            store,
            f"s{i}",
            "alice" if i % 2 else "bob",
            chat(
                MORNING + timedelta(minutes=i),
                f"Question {i} about the budget?",
                "Answer.",
                f"Decision {i}: let's go with plan {i}.",
            ),
        )


@pytest.mark.parametrize("crash", ["mid-batches", "before-files", "between-file-and-mark"])
def test_interrupted_run_recovers_to_the_clean_result(
    new_store: Callable[[str], Store], crash: str
) -> None:
    clean, crashed = new_store("clean"), new_store("crashed")
    for s in (clean, crashed):
        seed_many(s)
    run_sync(clean, AS_OF, batch_size=2)

    if crash == "mid-batches":
        with pytest.raises(OSError):
            run_sync(crashed, AS_OF, batch_size=2, embedder=FailingEmbedder(calls=1))
    elif crash == "before-files":
        run_sync(crashed, AS_OF, batch_size=2, flush=False)
    else:
        run_sync(crashed, AS_OF, batch_size=2, flush=False)
        root = open_memory_root(crashed.settings)
        with Session(crashed.engine) as session:
            for block in pending_blocks(session):  # the file write happened, the mark did not
                append_to_file(root, block.path, [(block.block_key, block.content)])
    assert snapshot(crashed) != snapshot(clean)  # the crash left the job unfinished

    run_sync(crashed, AS_OF, batch_size=2)

    assert snapshot(crashed) == snapshot(clean)
    assert counts(crashed) == counts(clean)
    assert files(memory_root(crashed), drop_ids=True) == files(memory_root(clean), drop_ids=True)


def test_embedder_of_another_dimension_is_refused(store: Store) -> None:
    with (
        Session(store.engine) as session,
        pytest.raises(ConfigurationError, match=r"\(384 dimensions\).*archivist reembed"),
    ):
        check_compatible(session, HashingEmbedder(128))


KILLABLE_SYNC = """
import sys
from datetime import datetime
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import run_sync

url, root, as_of = sys.argv[1:4]
store = open_store(Settings(database_url=url, memory_root=root, data_dir=root))
run_sync(store, datetime.fromisoformat(as_of), batch_size=1)
"""


def test_a_killed_sync_process_recovers_to_the_clean_result(
    new_store: Callable[[str], Store],
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    clean, killed = new_store("clean"), new_store("killed")
    for s in (clean, killed):
        for i in range(40):
            add_session(
                s,
                f"s{i:02}",
                f"ns{i % 3}",
                chat(
                    MORNING + timedelta(minutes=i),
                    f"Plan {i}: what about the budget?",
                    "Let's see.",
                    f"Decision {i}: go with option {i}.",
                ),
            )
    run_sync(clean, AS_OF)
    url = killed.engine.url.render_as_string(hide_password=False)
    root = killed.settings.memory_root_url
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLABLE_SYNC, url, root, AS_OF.isoformat()], env=env
    )
    deadline = time.monotonic() + 60
    while counts(killed)["processed_sessions"] < 10 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert 10 <= counts(killed)["processed_sessions"] < 80, "the kill did not land midway"

    run_sync(killed, AS_OF)

    assert snapshot(killed) == snapshot(clean)
    assert files(memory_root(killed), drop_ids=True) == files(memory_root(clean), drop_ids=True)
    for namespace in ("ns0", "ns1", "ns2"):  # the timeline: valid JSON Lines, each state once
        body = (memory_root(killed) / namespace / "timeline.jsonl").read_text("utf-8")
        sessions = [json.loads(line)["session"] for line in body.splitlines()]
        expected = [f"s{i:02}" for i in range(40) if i % 3 == int(namespace[-1])]
        assert sorted(sessions) == expected


def test_a_session_the_database_refuses_is_skipped_and_the_others_written(store: Store) -> None:
    seed_trip(store, "trip")
    seed_trip(store, "refused")
    seed_trip(store, "trip-2")
    ctx = SyncContext(
        extractor=HeuristicExtractor(),
        embedder=HashingEmbedder(store.settings.embedding.dim),
        as_of=AS_OF,
        tz=UTC,
        run_id=None,
    )
    with Session(store.engine) as session:
        batch = plan_sync(session, AS_OF, 26, 2, None).to_process
    # The database itself refuses one session's rows (what bad data of one session does).
    with store.engine.begin() as conn:
        conn.execute(
            text("ALTER TABLE memories ADD CONSTRAINT t_refuse CHECK (session_id <> 'refused')")
        )

    outcome = process_isolated(store, ctx, batch)

    assert (outcome.sessions, outcome.sessions_refused) == (2, 1)
    with store.engine.connect() as conn:
        written = conn.execute(text("SELECT DISTINCT session_id FROM memories")).scalars()
        assert sorted(written) == ["trip", "trip-2"]
        conn.execute(text("ALTER TABLE memories DROP CONSTRAINT t_refuse"))
        conn.commit()
    with Session(store.engine) as session:
        again = plan_sync(session, AS_OF, 26, 2, None).to_process
    assert [c.session_id for c in again] == ["refused"]  # tried again by the next run
    assert process_isolated(store, ctx, again).sessions == 1
