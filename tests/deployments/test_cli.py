"""The archivist command as a user runs it (click's runner, real store, real flow runs)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.cli import main
from deployments.commands.sync import demo_days
from storage.kernel.settings import Settings
from storage.server.migrate import head_revision
from tests.helpers import files


def test_db_upgrade_says_what_it_did(flow_env: Settings) -> None:
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert f"schema already at revision {head_revision()}" in result.output


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
    assert "ingested 1 session, 1 message from 1 file; 1 problem, 0 empty messages" in (
        result.output
    )


def test_bad_configuration_is_one_clear_line_per_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCHIVIST_TIMEZONE", "Mars/Olympus")
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__DIM", "many")
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__PROVIDER", "openai")
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: bad configuration: "
        "ARCHIVIST_TIMEZONE: unknown time zone 'Mars/Olympus'; use an IANA name; "
        "ARCHIVIST_EMBEDDING__DIM: Input should be a valid integer, unable to parse string as "
        "an integer",
    ]
    monkeypatch.setenv("ARCHIVIST_TIMEZONE", "UTC")
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__DIM", "384")
    needs_url = CliRunner().invoke(main, ["db", "upgrade"]).output
    assert "ARCHIVIST_EMBEDDING: the openai embedding provider needs" in needs_url
    assert "pydantic" not in needs_url and "Traceback" not in needs_url


def test_a_misspelled_setting_is_named_with_the_closest_real_one(
    flow_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVIST_SYNC__WINDOW_HOUR", "3")
    monkeypatch.setenv("ARCHIVIST_RETRIEVAL__WEIGHTS__SEMANTIC", "1")  # a dict key: valid
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "warning: ARCHIVIST_SYNC__WINDOW_HOUR is not an Archivist setting and is ignored; "
        "did you mean ARCHIVIST_SYNC__WINDOW_HOURS?"
    )
    assert "WEIGHTS__SEMANTIC" not in result.output


def test_a_bucket_without_credentials_is_one_line(
    flow_env: Settings, s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    options = {"client_kwargs": {"endpoint_url": s3_endpoint}}
    monkeypatch.setenv("ARCHIVIST_STORAGE_OPTIONS", json.dumps(options))

    result = CliRunner().invoke(main, ["ingest", "s3://inbox/transcripts"])

    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: cannot reach the object store: Unable to locate credentials; set AWS "
        'credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile), or "key" '
        'and "secret" in ARCHIVIST_STORAGE_OPTIONS'
    ]


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
    assert any(name.endswith("/MEMORY.md") for name in after_first)
    tail = first.output.split("try next:")[1].splitlines()
    assert [line.split()[1] for line in tail if line.strip()] == ["search", "prime", "status"]


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
