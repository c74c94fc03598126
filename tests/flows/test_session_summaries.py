"""memory-session-summaries through the Prefect engine."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from flows.session_summaries import memory_session_summaries
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.flows.test_daily_sync import artifact_markdown, artifacts
from tests.helpers import add_session, chat


def test_the_flow_summarises_idle_sessions_and_reports(flow_env: Settings) -> None:
    noon = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    store = open_store(flow_env)
    add_session(
        store,
        "quiet",
        "alice",
        chat(noon - timedelta(hours=1), "Is the flat viewing at 5?", "Yes."),
    )
    add_session(store, "busy", "alice", chat(noon - timedelta(minutes=5), "Typing...", "ok"))

    report = memory_session_summaries(as_of=noon)

    assert (report.written.sessions, report.still_active) == (1, 1)
    assert report.flow == "memory-session-summaries"
    reports = asyncio.run(artifact_markdown("memory-session-summaries-report"))
    assert any("| still active (not idle long enough) | 1 |" in r for r in reports)


def test_a_pass_that_finds_nothing_to_do_publishes_no_artifact(flow_env: Settings) -> None:
    noon = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    key = "memory-session-summaries-report"
    store = open_store(flow_env)
    add_session(store, "quiet2", "bob", chat(noon - timedelta(hours=1), "Gym at 7?", "Yes."))
    before = len(asyncio.run(artifacts(key)))

    wrote = memory_session_summaries(as_of=noon, namespace="bob")
    after_writing = len(asyncio.run(artifacts(key)))
    idle = [memory_session_summaries(as_of=noon + timedelta(minutes=5 * n)) for n in (1, 2)]

    assert wrote.written.sessions == 1 and after_writing == before + 1
    assert [r.idle for r in idle] == [True, True]
    assert len(asyncio.run(artifacts(key))) == after_writing  # no all-zeros reports
