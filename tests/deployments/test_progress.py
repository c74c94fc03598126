"""Progress bars of the long commands: on a terminal's stderr, and nothing anywhere else.

Two seams feed them. Commands that call plain functions pass a callback (``ingest`` here,
``eval`` in ``commands/test_eval.py``); flows run in this process report through their run
logs (``sync``, ``aging``). rich decides what a terminal is; ``TTY_COMPATIBLE=1`` makes it
take click's captured stderr for one, as it would a real one (the last test uses a real one).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.cli import main
from deployments.progress import RUN_LOGGERS
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import add_session, chat, final_bar

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
ARCHIVIST = str(Path(sys.executable).parent / "archivist")
_FORCING = ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR")


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr counts as a terminal, 120 columns wide."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich looks at the stream itself (click's runner: not a terminal)."""
    for name in _FORCING:
        monkeypatch.delenv(name, raising=False)


def write_transcripts(folder: Path, count: int) -> None:
    for n in range(count):
        header = {
            "type": "session",
            "id": f"s{n}",
            "namespace": "alice",
            "agent": "aria",
            "kind": "direct",
        }
        message = {
            "type": "message",
            "id": "m1",
            "role": "user",
            "speaker": "Alice",
            "content": f"note {n}",
            "timestamp": "2026-11-20T09:00:00Z",
        }
        (folder / f"s{n}.jsonl").write_text(f"{json.dumps(header)}\n{json.dumps(message)}\n")


def add_sessions(settings: Settings, count: int) -> None:
    store = open_store(settings)
    for n in range(count):
        start = AS_OF - timedelta(hours=10, minutes=n)
        texts = (f"Plan trip {n} to Lisbon?", "Sure.", "Window seats, please.", "Noted.")
        add_session(store, f"s{n}", "alice", chat(start, *texts))


def test_ingest_draws_its_files_on_a_terminal(
    flow_env: Settings, terminal: None, tmp_path: Path
) -> None:
    write_transcripts(tmp_path, 3)

    result = CliRunner().invoke(main, ["ingest", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert final_bar(result.stderr, "transcript files")[1] == "3/3"
    assert "ingested 3 sessions, 3 messages from 3 files" in result.stdout
    assert "loaded 3/3 files" not in result.output  # the bar took the progress line's place


def test_sync_follows_its_flow_runs_batches(
    flow_env: Settings, terminal: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_sessions(flow_env, 5)
    monkeypatch.setenv("ARCHIVIST_SYNC__BATCH_SIZE", "2")
    monkeypatch.delenv("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", raising=False)
    handlers = {name: list(logging.getLogger(name).handlers) for name in RUN_LOGGERS}

    result = CliRunner().invoke(main, ["sync", "--as-of", AS_OF.isoformat()])

    assert result.exit_code == 0, result.output
    assert final_bar(result.stderr, "sessions processed")[1] == "5/5"
    assert "| sessions written | 5 |" in result.stdout
    # The command leaves Prefect's loggers and the environment as it found them.
    assert {name: logging.getLogger(name).handlers for name in RUN_LOGGERS} == handlers
    assert "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL" not in os.environ


def test_aging_counts_its_steps(flow_env: Settings, terminal: None) -> None:
    result = CliRunner().invoke(main, ["aging", "--as-of", AS_OF.isoformat(), "--dry-run"])

    assert result.exit_code == 0, result.output
    bar = final_bar(result.stderr, "aging steps")
    assert bar[1] == "5/5" and bar[-1] == "access_log"
    assert "# memory-aging as of 2026-11-20 23:00" in result.stdout


def test_without_a_terminal_nothing_extra_is_printed(
    flow_env: Settings, no_terminal: None, tmp_path: Path
) -> None:
    write_transcripts(tmp_path, 3)
    add_sessions(flow_env, 2)
    runner = CliRunner()

    ingested = runner.invoke(main, ["ingest", str(tmp_path)])
    synced = runner.invoke(main, ["sync", "--as-of", AS_OF.isoformat()])

    assert ingested.exit_code == 0 and synced.exit_code == 0, ingested.output + synced.output
    assert ingested.stderr == "" and synced.stderr == ""
    assert ingested.stdout.splitlines() == [
        "  loaded 3/3 files, 3 messages",
        "ingested 3 sessions, 3 messages from 3 files; 0 problems, 0 empty messages",
    ]
    assert synced.stdout.startswith("# memory-sync-daily report")


def _read_terminal(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_real_terminal_gets_the_bar_and_a_pipe_keeps_the_output(
    flow_env: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    write_transcripts(folder, 4)
    env = {k: v for k, v in os.environ.items() if k not in _FORCING}
    env |= {"COLUMNS": "120", "TERM": "xterm", "ARCHIVIST_EMBEDDING__PROVIDER": "hashing"}
    primary, secondary = os.openpty()

    with subprocess.Popen(
        [ARCHIVIST, "ingest", str(folder)], stdout=subprocess.PIPE, stderr=secondary, env=env
    ) as child:
        os.close(secondary)
        shown = _read_terminal(primary)
        stdout = child.communicate(timeout=120)[0].decode()
    os.close(primary)

    assert child.returncode == 0, shown
    assert final_bar(shown, "transcript files")[1] == "4/4"
    assert stdout.splitlines() == [
        "ingested 4 sessions, 4 messages from 4 files; 0 problems, 0 empty messages"
    ]
