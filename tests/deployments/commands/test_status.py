"""archivist status: every section, on an empty store, a busy one, and without Prefect."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

import pytest
from click.testing import CliRunner
from prefect.settings import PREFECT_API_URL, temporary_settings
from sqlalchemy import text

from deployments.commands.status import (
    server_data,
    server_line,
    show_status,
    status_command,
    status_document,
)
from flows.daily_sync import memory_sync_daily
from storage.kernel.settings import Settings
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync
from tests.storage.run_process import RunningFlow

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
SECTIONS = (
    "== Prefect flow runs",
    "== Runs",
    "== Write queue",
    "== Memories per tier",
    "== Documents",
)


def screen(settings: Settings) -> str:
    lines: list[str] = []
    show_status(settings, lines.append, now=NOW)
    return "\n".join(lines)


def test_an_empty_store_shows_every_section_without_prefect(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(free_port()))  # no local server there
    with temporary_settings(updates={PREFECT_API_URL: None}):
        out = screen(store.settings)

    for section in (*SECTIONS, "== Last quality report"):
        assert section in out
    assert "n/a (no Prefect server answers; flow commands start one" in out
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


def free_port() -> int:
    with socket.socket() as probe:  # nothing listens on it once closed
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_first_line_says_the_prefect_api_answers(store: Store, prefect_harness: None) -> None:
    url = str(PREFECT_API_URL.value())  # the session's real Prefect server

    out = screen(store.settings)
    document = status_document(store.settings, NOW)

    assert f"== Prefect flow runs\n  Prefect API: {url} (reachable)\n" in out
    assert document["prefect_api"] == {
        "url": url,
        "configured": True,
        "reachable": True,
        "problem": None,
    }


def test_an_unreachable_prefect_api_is_said_in_one_line(store: Store) -> None:
    url = f"http://127.0.0.1:{free_port()}/api"
    with temporary_settings(updates={PREFECT_API_URL: url}):
        out = screen(store.settings)
        document = status_document(store.settings, NOW)

    [line] = [x.strip() for x in out.splitlines() if x.strip().startswith("Prefect API:")]
    assert line.startswith(f"Prefect API: {url} (unreachable: ConnectionRefusedError")
    assert line.endswith("; flow commands fail)")
    assert document["prefect_api"]["reachable"] is False
    assert document["prefect_api"]["problem"].startswith("ConnectionRefusedError")
    assert document["prefect"]["unavailable"].startswith(f"Prefect API at {url} unreachable")


def test_a_server_that_never_answers_costs_half_a_second(store: Store) -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/api"
        with temporary_settings(updates={PREFECT_API_URL: url}):
            started = time.monotonic()
            document = status_document(store.settings, NOW)
            elapsed = time.monotonic() - started

    assert document["prefect_api"]["problem"] == "TimeoutError: no answer within 0.5 s"
    assert elapsed < 1.5  # the probe's 0.5 s, plus reading the store


def test_without_a_url_the_line_says_whether_a_local_server_runs(
    store: Store, prefect_harness: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = urlparse(str(PREFECT_API_URL.value()))
    monkeypatch.setenv("PREFECT_SERVER_API_HOST", "127.0.0.1")
    with temporary_settings(updates={PREFECT_API_URL: None}):
        monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(running.port))
        found = screen(store.settings)
        monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(port := free_port()))
        none = screen(store.settings)

    local = f"http://127.0.0.1:{running.port}/api"
    assert f"Prefect API: {local} (reachable, not configured: flow commands use it)" in found
    assert "n/a" not in found.split("== Runs")[0]  # the local server's runs are listed
    assert f"Prefect API: none (nothing answers at http://127.0.0.1:{port}/api)" in none
    assert "); flow commands start a local server there, see README" in none
    assert "n/a (no Prefect server answers; flow commands start one" in none


def test_the_store_line_says_which_server_and_how_long_the_embedded_one_stays_up(
    store: Store, tmp_path: Path
) -> None:
    external = server_data(store.settings)
    kept = server_data(Settings(data_dir=tmp_path, embedded_keep_alive_seconds=600))
    alone = server_data(Settings(data_dir=tmp_path, embedded_keep_alive_seconds=0))

    assert external == {"embedded": False}
    assert server_line(external) == "PostgreSQL at ARCHIVIST_DATABASE_URL"
    assert kept["keeper_pid"] is None  # nothing started in this folder
    assert server_line(kept) == (
        f"embedded PostgreSQL in {tmp_path / 'pgdata'}; "
        "up 600 s after its last client (`archivist db stop`: now)"
    )
    assert server_line(alone) == f"embedded PostgreSQL in {tmp_path / 'pgdata'}; stops with it"
    assert "== Store\n  PostgreSQL at ARCHIVIST_DATABASE_URL\n" in screen(store.settings)


def test_documents_are_counted_per_namespace(store: Store, tmp_path: Path) -> None:
    from storage.embedding import HashingEmbedder
    from tasks.documents import Chunking, IngestRequest, ingest_documents

    folder = tmp_path / "kb"
    folder.mkdir()
    for name in ("boiler", "garden"):
        paragraphs = [f"The {name} note, part {n}: " + "words " * 150 for n in range(4)]
        (folder / f"{name}.md").write_text(f"# {name}\n\n" + "\n\n".join(paragraphs))
    embedder = HashingEmbedder(store.settings.embedding.dim)
    before = screen(store.settings).split("== Documents")[1].split("==")[0]
    request = IngestRequest("acme", [str(folder)], Chunking(1200, 150), max_bytes=1_000_000, at=NOW)
    report = ingest_documents(store.engine, embedder, request)

    out = screen(store.settings).split("== Documents")[1].split("==")[0]
    document = status_document(store.settings, NOW)

    assert report.added == 2 and report.chunks > 2
    assert f"acme                                  2 {report.chunks:>10}" in out
    assert f"total (1 namespaces)                  2 {report.chunks:>10}" in out
    assert document["documents"] == {"acme": {"documents": 2, "chunks": report.chunks}}
    assert "no documents (archivist docs ingest NS PATH)" in before
