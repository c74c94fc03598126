"""``timeline.jsonl`` through the Prefect engine: the daily sync's session lines, the tidy's,
archival's, and the forget flow removing the file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from flows.aging import memory_aging
from flows.daily_sync import memory_sync_daily
from flows.forget import memory_forget
from flows.weekly_tidy import memory_weekly_tidy
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import add_session, chat, pseudonym
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import AS_OF, LONG_AGO, RECENTLY, synced_session

SUNDAY = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)
TALK = (
    "I need help choosing the venue for the offsite in March.",
    "Sure: the Lisbon hotel or the Porto one?",
    "I prefer Porto. Let's go with the Porto hotel for the offsite.",
)


def timeline(settings: Settings, namespace: str) -> list[dict[str, Any]]:
    path = Path(settings.memory_root_url) / namespace / "timeline.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def rows(settings: Settings, sql: str) -> list[Any]:
    with open_store(settings).engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def test_the_daily_sync_flow_writes_each_state_once_with_its_run(flow_env: Settings) -> None:
    store = open_store(flow_env)
    add_session(store, "s1", "alice", chat(SUNDAY - timedelta(hours=10), *TALK), title="Offsite")

    first = memory_sync_daily(as_of=SUNDAY)
    second = memory_sync_daily(as_of=SUNDAY)

    (line,) = timeline(flow_env, "alice")
    (run_id,), _ = rows(flow_env, "SELECT id FROM runs ORDER BY started_at")
    assert first.written.sessions == 1 and second.blocks_appended == 0
    assert line["run"] == str(run_id) and line["as_of"] == SUNDAY.isoformat()
    assert line["title"] == "Offsite" and line["started"] == "2026-11-22T12:00:00+00:00"
    assert f"{pseudonym(store, 'alice')}/timeline.jsonl" in first.files_touched


def test_the_weekly_tidy_appends_its_counts_once_per_run(flow_env: Settings) -> None:
    store = open_store(flow_env)
    add_session(store, "s1", "alice", chat(SUNDAY - timedelta(days=2), *TALK))
    memory_sync_daily(as_of=SUNDAY - timedelta(days=1))

    report = memory_weekly_tidy(as_of=SUNDAY)
    again = memory_weekly_tidy(as_of=SUNDAY)  # the same run's retry: no second line

    session, tidy = timeline(flow_env, "alice")
    alice = report.namespaces[0]
    assert session["event"] == "session" and again.entered == 0
    assert tidy["event"] == "tidy" and tidy["week"] == report.week == "2026-11-16"
    assert (tidy["entered"], tidy["left"], tidy["kept"]) == (len(alice.entered), 0, 0)
    assert (tidy["lines"], tidy["bytes"], tidy["candidates"]) == (
        alice.lines,
        alice.bytes,
        alice.candidates,
    )
    assert tidy["as_of"] == SUNDAY.isoformat() and tidy["entered"] > 0
    assert "Porto" not in json.dumps(tidy)  # counts, never text
    later = memory_weekly_tidy(as_of=SUNDAY + timedelta(days=7))
    assert [line["event"] for line in timeline(flow_env, "alice")] == ["session", "tidy", "tidy"]
    assert later.namespaces[0].namespace == pseudonym(store, "alice")


def test_archival_appends_a_line_per_committed_file(flow_env: Settings) -> None:
    store = open_store(flow_env)
    synced_session(store, "old", "alice", LONG_AGO)
    synced_session(store, "new", "alice", RECENTLY)
    put(store, "alice", ["ancient note"], AS_OF - timedelta(days=900))

    report = memory_aging(as_of=AS_OF)
    memory_aging(as_of=AS_OF)

    archived = [line for line in timeline(flow_env, "alice") if line["event"] == "archive"]
    committed = rows(
        flow_env,
        "SELECT uri, row_count FROM archive_manifest WHERE kind = 'memories' "
        "AND status = 'committed' ORDER BY uri",
    )
    assert report.archival.rows_archived > 0 and len(committed) == report.archival.files
    assert sorted((line["file"], line["memories"]) for line in archived) == committed
    assert sum(line["memories"] for line in archived) == report.archival.rows_archived
    assert {line["partition"] for line in archived} == {
        "namespace=alice/year=2024",
        "namespace=alice/year=2025",
    }
    assert all(line["as_of"] == AS_OF.isoformat() for line in archived)


def test_forget_flow_removes_the_namespace_timeline_only(flow_env: Settings) -> None:
    store = open_store(flow_env)
    for sid, namespace in (("s1", "acme"), ("s2", "acme2")):
        add_session(store, sid, namespace, chat(SUNDAY - timedelta(hours=10), *TALK))
    memory_sync_daily(as_of=SUNDAY)
    root = Path(flow_env.memory_root_url)
    assert (root / "acme/timeline.jsonl").exists()

    memory_forget("acme", confirm=True)

    assert not (root / "acme/timeline.jsonl").exists()
    assert [line["session"] for line in timeline(flow_env, "acme2")] == ["s2"]
    assert rows(flow_env, "SELECT count(*) FROM memory_file_blocks WHERE namespace = 'acme'") == [
        (0,)
    ]
