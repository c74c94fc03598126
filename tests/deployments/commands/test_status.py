"""archivist status: every section, on an empty store, a busy one, and without Prefect."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from prefect.settings import PREFECT_API_URL, temporary_settings
from sqlalchemy import text

from deployments.commands.status import show_status, status_command
from flows.daily_sync import memory_sync_daily
from storage.config import Settings
from storage.engine import Store
from tests.helpers import add_session, chat, run_sync
from tests.storage.run_process import RunningFlow

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
SECTIONS = ("== Prefect flow runs", "== Runs", "== Write queue", "== Memories per tier")


def screen(settings: Settings) -> str:
    lines: list[str] = []
    show_status(settings, lines.append, now=NOW)
    return "\n".join(lines)


def test_an_empty_store_shows_every_section_without_prefect(store: Store) -> None:
    with temporary_settings(updates={PREFECT_API_URL: None}):
        out = screen(store.settings)

    for section in (*SECTIONS, "== Last quality report"):
        assert section in out
    assert "n/a (PREFECT_API_URL is not set" in out
    assert "no runs recorded yet" in out
    assert "empty" in out and "dead: 0" in out
    assert "total (0 namespaces)" in out
    assert "no quality run yet" in out


def test_a_busy_store_shows_counts_queue_and_prefect_runs(
    store: Store, prefect_harness: None
) -> None:
    add_session(
        store, "trip", "alice", chat(NOW - timedelta(hours=10), "Book Lisbon.", "Done.", "Thanks")
    )
    run_sync(store, NOW)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO memory_write_queue (namespace, op, payload, status, attempts,"
                " max_attempts, available_at, created_at, updated_at) VALUES"
                " ('alice', 'ADD_MEMORY', '{}', 'pending', 0, 3, :t, :t, :t),"
                " ('alice', 'ADD_MEMORY', '{}', 'dead', 3, 3, :t, :t, :t)"
            ),
            {"t": NOW - timedelta(minutes=30)},
        )
        memories = conn.execute(text("SELECT count(*) FROM memories")).scalar_one()

    out = screen(store.settings)

    assert "dead 1, pending 1" in out and "oldest pending: 2026-11-21 07:30 UTC (30 min ago)" in out
    assert "alice" in out and "total (1 namespaces)" in out and str(memories) in out
    assert "n/a (PREFECT_API_URL" not in out  # the harness's API answered


def test_a_run_killed_mid_way_shows_as_crashed_once_the_next_run_started(
    flow_env: Settings,
) -> None:
    assert flow_env.database_url is not None
    with RunningFlow(flow_env.database_url.get_secret_value(), "memory-sync-daily") as killed:
        killed.kill()
    with temporary_settings(updates={PREFECT_API_URL: None}):
        before = screen(flow_env)
    memory_sync_daily(as_of=NOW)  # the next run of the same flow
    with temporary_settings(updates={PREFECT_API_URL: None}):
        after = screen(flow_env)

    assert "crashed runs" not in before  # the killed run still said running
    [line] = [x.strip() for x in after.splitlines() if "crashed runs:" in x]
    assert line.startswith("crashed runs: 1; last: memory-sync-daily started")
    assert line.endswith(f"its process {killed.pid} on {socket.gethostname()} is gone")


def test_an_unreachable_prefect_api_and_a_missing_table_degrade(store: Store) -> None:
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE memory_write_queue CASCADE"))
        conn.execute(text("DROP TABLE quality_runs"))

    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        out = screen(store.settings)

    assert "n/a (Prefect API at http://127.0.0.1:9/api unreachable" in out
    assert "n/a (no memory_write_queue table" in out
    assert "n/a (no quality_runs table" in out


def test_the_click_command_prints_the_screen(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    assert store.settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", store.settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(store.settings.data_dir))
    with temporary_settings(updates={PREFECT_API_URL: None}):
        result = CliRunner().invoke(status_command, [])

    assert result.exit_code == 0, result.output
    assert all(section in result.output for section in SECTIONS)
