"""End-to-end runs of memory-sync-daily through the Prefect engine."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
from prefect.client.schemas.objects import Artifact
from sqlalchemy import text
from sqlalchemy.orm import Session

from flows.daily_sync import memory_sync_daily
from storage.kernel.errors import InputError
from storage.kernel.settings import Settings
from storage.pseudonyms import pseudonyms, session_pseudonym
from storage.server.engine import open_store

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)


def transcript(path: Path, sid: str, namespace: str, kind: str = "direct", extra: str = "") -> None:
    lines = [
        {"type": "session", "id": sid, "namespace": namespace, "agent": "aria", "kind": kind},
        {
            "type": "message",
            "id": "m1",
            "role": "user",
            "speaker": "Alice",
            "content": "Can you help me plan the Lisbon trip in March?",
            "timestamp": "2026-11-20T09:00:00Z",
        },
        {
            "type": "message",
            "id": "m2",
            "role": "assistant",
            "speaker": "aria",
            "content": "Yes: TAP flies direct on Friday morning.",
            "timestamp": "2026-11-20T09:01:00Z",
        },
        {
            "type": "message",
            "id": "m3",
            "role": "user",
            "speaker": "Alice",
            "content": "Let's go with TAP. I prefer window seats.",
            "timestamp": "2026-11-20T09:02:00Z",
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n" + extra)


async def artifact_markdown(key: str) -> list[str]:
    return [str(a.data) for a in await artifacts(key)]


async def artifacts(key: str) -> list[Artifact]:
    async with get_client() as client:
        return await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))
        )


def test_flow_ingests_syncs_reports_and_is_idempotent(flow_env: Settings, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    transcript(inbox / "a.jsonl", "s-alice", "alice")
    transcript(inbox / "b.jsonl", "s-bob", "bob", kind="subagent", extra="not json\n")

    first = memory_sync_daily(as_of=AS_OF, transcripts_url=str(inbox))
    second = memory_sync_daily(as_of=AS_OF, transcripts_url=str(inbox))

    # a log block or task card, and a timeline line, per session
    assert first.written.sessions == 2 and first.blocks_appended == 4
    assert first.ingest is not None and first.ingest["bad_input"] == 1
    assert "b.jsonl:5: not valid JSON" in first.ingest["problems"][0]
    store = open_store(flow_env)
    with Session(store.engine) as session, session.begin():
        names = pseudonyms(session, ["alice", "bob"]).namespaces
    # The files by their namespace's pseudonym: the report outlives a forget.
    assert sorted(first.files_touched) == sorted(
        [
            f"{names['alice']}/memory/2026-11-20.md",
            f"{names['alice']}/timeline.jsonl",
            f"{names['bob']}/memory/tasks/2026-11-20.md",
            f"{names['bob']}/timeline.jsonl",
        ]
    )
    assert second.written.sessions == 0 and second.unchanged == 2 and second.blocks_appended == 0
    with store.engine.connect() as conn:
        statuses = [
            tuple(r)
            for r in conn.execute(
                text("SELECT status, report->>'sessions_seen' FROM runs ORDER BY started_at")
            )
        ]
    assert statuses == [("completed", "2"), ("completed", "2")]
    import asyncio

    reports = asyncio.run(artifact_markdown("memory-sync-daily-report"))
    assert any("| sessions written | 2 |" in r for r in reports)
    described = {a.description for a in asyncio.run(artifacts("memory-sync-daily-report"))}
    assert "memory-sync-daily as of 2026-11-20 23:00:00 UTC" in described


def test_a_poisoned_transcript_never_stops_the_nightly_sync(
    flow_env: Settings, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    transcript(inbox / "a.jsonl", "s-alice", "alice")
    transcript(inbox / "b.jsonl", "s-bob", "bob")
    poisoned = (inbox / "b.jsonl").read_text().replace("TAP flies", "TAP\\u0000flies")
    (inbox / "b.jsonl").write_text(
        poisoned.replace('"s-bob", "namespace"', '"s-bob", "title": "a\\u0000b", "namespace"')
    )
    transcript(inbox / "c.jsonl", "s-carol", "carol")
    (inbox / "c.jsonl").write_text(
        (inbox / "c.jsonl").read_text().replace("TAP flies", "TAP\\u0000flies")
    )

    report = memory_sync_daily(as_of=AS_OF, transcripts_url=str(inbox))

    assert report.ingest is not None and report.ingest["bad_input"] == 2
    assert report.ingest["sessions"] == 2  # alice whole, carol without her poisoned line
    assert report.written.sessions == 2
    assert any("b.jsonl:1: bad session line" in p for p in report.ingest["problems"])
    assert any("c.jsonl:3:" in p and "NUL" in p for p in report.ingest["problems"])


def test_bad_parameters_fail_before_any_work(flow_env: Settings) -> None:
    from prefect.exceptions import ParameterTypeError

    with pytest.raises(ParameterTypeError):
        memory_sync_daily(as_of=AS_OF, window_hours=0)
    with pytest.raises(ParameterTypeError):
        memory_sync_daily(as_of=AS_OF, namespace="../etc")
    store = open_store(flow_env)
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar_one() == 0


def test_report_counts_what_stays_unsearchable_without_quoting_it(
    flow_env: Settings, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    quiet = {"type": "message", "speaker": "Alice", "timestamp": "2026-11-20T09:05:00Z"}
    lines = [
        {**quiet, "id": "m4", "role": "user", "content": "  "},
        {**quiet, "id": "m5", "role": "user", "content": "Bye!"},
    ]
    transcript(inbox / "a.jsonl", "s-alice", "alice", extra="\n".join(map(json.dumps, lines)))
    notice = {"type": "session", "id": "s-notice", "namespace": "alice", "agent": "aria"}
    ping = {**quiet, "id": "m1", "role": "assistant", "speaker": "aria", "content": "Reminder!"}
    (inbox / "n.jsonl").write_text(f"{json.dumps(notice)}\n{json.dumps(ping)}\n")

    report = memory_sync_daily(as_of=AS_OF, transcripts_url=str(inbox))

    store = open_store(flow_env)
    with store.engine.connect() as conn:
        stored = conn.execute(text("SELECT report FROM runs")).scalar_one()
    assert stored["ingest"]["empty_content"] == 1
    with Session(store.engine) as session, session.begin():
        notice_label = session_pseudonym(session, "alice", "s-notice")
    assert stored["skipped_no_user_message"] == 1
    assert stored["skipped_sessions"] == [notice_label] and "s-notice" not in json.dumps(stored)
    assert (stored["written"]["messages_empty"], stored["written"]["messages_too_short"]) == (1, 1)
    summary = report.markdown()  # what `archivist sync` prints
    assert "| messages without a memory: empty / too short for a turn | 1 / 1 |" in summary
    assert "| skipped: no user message, fewer assistant messages than the minimum | 1 |" in summary
    assert "| messages loaded with empty content | 1 |" in summary
    assert "Bye" not in json.dumps(stored) and "Reminder" not in json.dumps(stored)


def test_a_failed_run_is_recorded_failed_not_left_running(
    flow_env: Settings, tmp_path: Path
) -> None:
    with pytest.raises(InputError):
        memory_sync_daily(as_of=AS_OF, transcripts_url=str(tmp_path / "missing"))

    with open_store(flow_env).engine.connect() as conn:
        row = conn.execute(
            text("SELECT status, finished_at IS NOT NULL, report->>'reason' FROM runs")
        ).one()
    assert row[0] == "failed" and row[1]
    assert row[2].startswith("the flow run failed; its error is in Prefect's flow run ")
