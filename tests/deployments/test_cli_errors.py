"""Every CLI error is one line on stderr that says what to type instead, with no traceback,
on a terminal or not: exit 2 for a usage error (click's convention), 1 for any other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName

from deployments.cli import main
from deployments.cli_errors import error_line
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.storage.memory_factory import put

ARCHIVIST = str(Path(sys.executable).parent / "archivist")
AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)

USAGE_ERRORS = {
    "sync --as-of 2026-13-01": (
        "Error: Invalid value for '--as-of': '2026-13-01' is not a day or a time: type "
        "2026-11-20, 2026-11-20T23:00:00 or 2026-11-20T23:00:00+01:00; usage: archivist sync "
        "[OPTIONS] (more: archivist sync --help)"
    ),
    "search alice": (
        "Error: Missing argument 'QUERY'; usage: archivist search [OPTIONS] NAMESPACE QUERY "
        "(more: archivist search --help)"
    ),
    "search alice dentist --limt 3": "usage: archivist search [OPTIONS] NAMESPACE QUERY",
    "serch alice dentist": "Error: No such command 'serch'.",
    "docs bogus": "usage: archivist docs [OPTIONS] COMMAND [ARGS]...",
    "--bogus": "Error: No such option '--bogus'; usage: archivist [OPTIONS] COMMAND [ARGS]...",
    "tidy --namespace ALICE": "'ALICE': 1 to 100 lowercase letters",
    "eval missing.jsonl missing.jsonl": "File 'missing.jsonl' does not exist",
}


@pytest.mark.parametrize("args", list(USAGE_ERRORS), ids=list(USAGE_ERRORS))
def test_a_usage_error_is_one_line_with_the_usage_and_exits_2(args: str) -> None:
    result = CliRunner().invoke(main, args.split(), prog_name="archivist")

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert USAGE_ERRORS[args] in result.stderr
    assert "%Y" not in result.stderr  # no strptime patterns to decode


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """This test's store and data folder, as a user's shell would export them."""
    assert settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("ARCHIVIST_MEMORY_ROOT", settings.memory_root_url)
    return settings


def one_error(result: object) -> str:
    """The one line a failed command printed on stderr."""
    stderr = getattr(result, "stderr", "")
    lines = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_a_document_path_that_does_not_exist_exits_1(env: Settings, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nThe dentist is on Friday.\n")

    result = CliRunner().invoke(
        main, ["docs", "ingest", "alice", str(tmp_path / "notes.md"), str(tmp_path / "gone.md")]
    )

    assert result.exit_code == 1
    assert "1 files: 1 added" in result.stdout  # the file that is there is ingested
    assert one_error(result) == (
        f"Error: not found: {tmp_path / 'gone.md'}; give a folder, a file or "
        "s3://bucket/prefix that exists"
    )


def test_a_namespace_that_holds_nothing_is_answered_with_the_ones_that_do(
    env: Settings,
) -> None:
    put(open_store(env), "alice", ["the dentist is on Friday"], AT)

    typo = CliRunner().invoke(main, ["search", "alcie", "dentist"])
    primed = CliRunner().invoke(main, ["prime", "alcie"])
    found = CliRunner().invoke(main, ["search", "alice", "dentist"])

    assert typo.exit_code == 0 and typo.stdout == "no memories found\n"
    hint = "note: namespace 'alcie' holds nothing; namespaces that do: alice\n"
    assert typo.stderr == hint
    assert primed.exit_code == 0 and primed.stderr == hint
    assert found.exit_code == 0 and "note:" not in found.stderr


def test_eval_of_a_file_with_no_session_is_one_line(env: Settings, tmp_path: Path) -> None:
    empty, prose = tmp_path / "empty.jsonl", tmp_path / "prose.txt"
    empty.write_text("")
    prose.write_text("Dear diary,\nnothing happened today.\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q"}) + "\n")

    for sessions in (empty, prose):
        result = CliRunner().invoke(main, ["eval", str(sessions), str(queries)])

        assert result.exit_code == 1
        assert one_error(result).startswith(f"Error: no session in {sessions}: each session")


def test_sync_of_transcripts_that_do_not_exist_stops_before_a_flow_runs(
    flow_env: Settings, tmp_path: Path
) -> None:
    with get_client(sync_client=True) as client:
        syncs = FlowFilter(name=FlowFilterName(any_=["memory-sync-daily"]))
        before = len(client.read_flow_runs(flow_filter=syncs))

    result = CliRunner().invoke(main, ["sync", "--transcripts", str(tmp_path / "nonexistent")])

    assert result.exit_code == 1
    assert one_error(result) == (
        f"Error: no such folder or file: {tmp_path / 'nonexistent'}; give a folder, a *.jsonl "
        "file or s3://bucket/prefix of transcripts"
    )
    with get_client(sync_client=True) as client:
        assert len(client.read_flow_runs(flow_filter=syncs)) == before  # no run, no alert


def test_a_flow_that_fails_prints_no_traceback(flow_env: Settings, tmp_path: Path) -> None:
    """A real process whose flow run fails inside (its embedder does not match the store's
    vectors): the run's log lines and one error line, never Prefect's traceback."""
    put(open_store(flow_env), "alice", ["the dentist is on Friday"], AT)
    from prefect.settings import PREFECT_API_URL

    child = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    child |= {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "openai",
        "ARCHIVIST_EMBEDDING__BASE_URL": "http://127.0.0.1:9/v1",
        "ARCHIVIST_EMBEDDING__MODEL": "other",
    }

    done = subprocess.run(
        [ARCHIVIST, "aging", "--dry-run"], env=child, capture_output=True, text=True, timeout=300
    )

    assert done.returncode == 1
    assert "Flow run encountered an exception: ConfigurationError" in done.stderr  # it ran
    assert "Traceback" not in done.stderr
    assert one_error(done).startswith("Error: the store's vectors come from hashing")


def test_an_error_nobody_foresaw_is_one_line_and_its_traceback_a_file() -> None:
    empty: dict[str, int] = {}
    try:
        empty["missing"]
    except KeyError as exc:
        line = error_line(exc)

    assert line is not None and line.exit_code == 1
    message = line.format_message()
    assert message.startswith("unexpected KeyError: 'missing' (a bug: the traceback is in ")
    path = Path(message.split("the traceback is in ")[1].split(";")[0])
    assert "Traceback" in path.read_text() and "KeyError" in path.read_text()
    path.unlink()
