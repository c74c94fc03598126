"""Flow commands without ``PREFECT_API_URL`` start one local Prefect server and keep it.

Real ``archivist`` processes, a real ``prefect server start`` on a free port, a fresh
``PREFECT_HOME`` each: the first command starts the server and waits for it, the next one
finds it answering, ``archivist prefect stop`` stops it; a start allowance too short for the
machine is one line naming the setting; a flow command killed with ``kill -9`` in the middle
of its run leaves nothing behind but the kept server.

Each ``PREFECT_HOME`` holds a copy of the database a Prefect server's first start makes
(``prefect_started``): its server finds the migrations done, as a user's does from the
second start on. Migrating from nothing is Prefect's own work, done by the session's first
test server; here it cost each start 4 s of CPU (7.6 s against 3.5 s until it answered and
5 s after, 2026-11-29), nothing of Archivist's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest

from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import add_session, chat

ARCHIVIST = str(Path(sys.executable).parent / "archivist")
STARTS = 600.0  # seconds a server may take to start on a loaded machine (the default: 300)
NOW = datetime.now(UTC).replace(microsecond=0)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def local(settings: Settings, tmp_path: Path, prefect_started: Path) -> Iterator[dict[str, str]]:
    """A user's environment: this test's store, no Prefect URL, a Prefect home and a port of
    its own; whatever server a command left there is stopped afterwards."""
    assert settings.database_url is not None
    home = tmp_path / "prefect-home"
    home.mkdir()
    shutil.copyfile(prefect_started, home / "prefect.db")  # Prefect's default database
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {
        "ARCHIVIST_DATABASE_URL": settings.database_url.get_secret_value(),
        "ARCHIVIST_DATA_DIR": str(settings.data_dir),
        "ARCHIVIST_MEMORY_ROOT": settings.memory_root_url,
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
        "ARCHIVIST_PREFECT__STARTUP_SECONDS": str(STARTS),
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_API_PORT": str(free_port()),
    }
    yield env
    archivist(env, "prefect", "stop")


def archivist(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ARCHIVIST, *args], env=env, capture_output=True, text=True, timeout=STARTS + 120
    )


def kept_pid(env: dict[str, str]) -> int:
    return int(json.loads((Path(env["PREFECT_HOME"]) / "archivist-server.json").read_text())["pid"])


def listening(port: str) -> bool:
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
    except OSError:
        return False
    return True


def test_the_first_flow_command_starts_a_kept_server_the_next_uses_it(
    local: dict[str, str],
) -> None:
    url = f"http://127.0.0.1:{local['PREFECT_SERVER_API_PORT']}"

    first = archivist(local, "queue", "drain")
    pid = kept_pid(local)
    second = archivist(local, "queue", "drain")
    stopped = archivist(local, "prefect", "stop")

    assert first.returncode == 0, first.stderr[-3000:]
    assert f"starting a local Prefect server at {url} " in first.stderr
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"using the Prefect server at {url}/api" in second.stderr
    assert "starting" not in second.stderr
    assert "temporary server" not in first.stderr + second.stderr  # Prefect's own never ran
    assert "# memory-queue-drain report" in second.stdout
    assert stopped.stdout.strip() == f"stopped the local Prefect server at {url} (pid {pid})"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not listening(local["PREFECT_SERVER_API_PORT"])


def test_a_start_allowance_too_short_is_one_line_naming_the_setting(
    local: dict[str, str],
) -> None:
    home = Path(local["PREFECT_HOME"])

    done = archivist(local | {"ARCHIVIST_PREFECT__STARTUP_SECONDS": "0.5"}, "queue", "drain")

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        "Error: the local Prefect server did not answer within 0.5 s; a busy machine may need "
        "longer: set ARCHIVIST_PREFECT__STARTUP_SECONDS=600 "
        f"(its log: {home / 'archivist-server.log'})"
    )
    assert not (home / "archivist-server.json").exists()  # the server it started is stopped
    assert not listening(local["PREFECT_SERVER_API_PORT"])


# An extractor that says it started, then waits until the flow that started it is gone.
STALLING_EXTRACTOR = """
import os, pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
parent = os.getppid()
while os.getppid() == parent:
    time.sleep(0.05)
"""


def test_a_flow_command_killed_mid_run_leaves_only_the_kept_server(
    local: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    turns = chat(NOW - timedelta(hours=2), "Book the dentist.", "Done.", "Thanks!", "Sure.")
    add_session(open_store(settings), "s1", "alice", turns)
    marker = tmp_path / "extracting"
    stalling = [sys.executable, "-c", STALLING_EXTRACTOR, str(marker)]
    env = local | {
        "ARCHIVIST_EXTRACTOR__MODE": "command",
        "ARCHIVIST_EXTRACTOR__COMMAND": json.dumps(stalling),
    }
    command = subprocess.Popen(
        [ARCHIVIST, "sync"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + STARTS
        while not marker.exists():  # the flow run is in the middle of its extractor
            assert command.poll() is None, command.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the flow never reached its extractor"
            time.sleep(0.1)
        descendants = psutil.Process(command.pid).children(recursive=True)
        command.send_signal(signal.SIGKILL)
        command.wait(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
        assert command.stderr is not None
        command.stderr.close()
    kept = psutil.Process(kept_pid(local))
    server = {kept.pid} | {p.pid for p in kept.children(recursive=True)}
    extractor = int(marker.read_text())

    gone = psutil.wait_procs([p for p in descendants if p.pid not in server], timeout=60)[0]

    assert extractor in {p.pid for p in descendants}  # the run really was in flight
    assert {p.pid for p in descendants} - {p.pid for p in gone} <= server
    assert kept.is_running() and kept.pid in {p.pid for p in descendants}
    again = archivist(local, "queue", "drain")  # the kept server serves the next command
    assert again.returncode == 0, again.stderr[-3000:]
    assert "using the Prefect server at" in again.stderr
