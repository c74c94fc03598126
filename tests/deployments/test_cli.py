"""The archivist command as a user runs it (click's runner, real store, real flow runs)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.cli import main
from deployments.commands.sync import demo_days
from storage.config import Settings
from storage.migrate import head_revision
from tests.helpers import files


def test_db_upgrade_says_what_it_did(flow_env: Settings) -> None:
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert f"schema already at revision {head_revision(flow_env)}" in result.output


def test_ingest_prints_counts_and_each_problem(flow_env: Settings, tmp_path: Path) -> None:
    header = {
        "type": "session",
        "id": "s1",
        "namespace": "alice",
        "agent": "aria",
        "kind": "direct",
    }
    message = {
        "type": "message",
        "id": "m1",
        "role": "user",
        "speaker": "A",
        "content": "hi",
        "timestamp": "2026-11-20T09:00:00Z",
    }
    (tmp_path / "s1.jsonl").write_text(f"{json.dumps(header)}\n{json.dumps(message)}\n{{oops\n")

    result = CliRunner().invoke(main, ["ingest", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert "s1.jsonl:3: not valid JSON" in result.output
    assert "ingested 1 sessions, 1 messages from 1 files; 1 problems" in result.output


def test_bad_configuration_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCHIVIST_TIMEZONE", "Mars/Olympus")
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 1
    assert "unknown time zone 'Mars/Olympus'" in result.output


def test_demo_twice_changes_nothing_the_second_time(
    flow_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "WARNING")
    runner = CliRunner()

    first = runner.invoke(main, ["demo", "--days", "4"])
    after_first = files(Path(flow_env.memory_root_url))
    second = runner.invoke(main, ["demo", "--days", "4"])

    assert first.exit_code == 0, first.output
    assert second.exit_code == 0, second.output
    assert "4 problems" in first.output and "[ 4/4]" in first.output
    assert any(name.endswith(".md") and "/tasks/" in name for name in after_first)
    assert " 0 written" in second.output and ", 0 memories, 0 blocks" in second.output
    assert " 0 written" not in first.output.split("[ 4/4]")[1]
    assert files(Path(flow_env.memory_root_url)) == after_first


def test_demo_back_fills_the_23h_runs_that_have_passed(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, timezone="Europe/Berlin")
    before = demo_days(settings, 2, datetime(2026, 11, 20, 21, 0, tzinfo=UTC))  # 22:00 Berlin
    after = demo_days(settings, 2, datetime(2026, 11, 20, 22, 30, tzinfo=UTC))  # 23:30 Berlin
    assert [d.isoformat() for d in before] == [
        "2026-11-18T23:00:00+01:00",
        "2026-11-19T23:00:00+01:00",
    ]
    assert [d.isoformat() for d in after] == [
        "2026-11-19T23:00:00+01:00",
        "2026-11-20T23:00:00+01:00",
    ]
