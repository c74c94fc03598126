"""Connecting: the embedded server's life cycle, URLs, pgvector and schema checks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.settings import Settings
from storage.server.engine import (
    check_pgvector,
    get_engine,
    libpq_uri,
    open_store,
    resolve_url,
)
from storage.server.migrate import head_revision, require_current, upgrade

HOLD_STORE = """
import sys, time
from storage.kernel.settings import Settings
from storage.server.engine import open_store
store = open_store(Settings(data_dir=sys.argv[1]))
with store.engine.connect() as conn:
    tuned = [conn.exec_driver_sql(f"SHOW {name}").scalar() for name in sys.argv[2:]]
print("ready", *tuned, flush=True)
time.sleep(120)
"""


TUNED = ("max_wal_size", "checkpoint_timeout", "shared_buffers", "wal_init_zero")


def postmaster_running(pgdata: Path) -> bool:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_embedded_server_starts_is_reused_and_stops_on_signal(tmp_path: Path, how: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("ARCHIVIST_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_STORE, str(tmp_path), *TUNED],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        # A shell without job control starts background jobs with SIGINT ignored, and a
        # child inherits that: Ctrl-C reaches the store as it does in a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    # A new data dir's server is restarted once, so the cache size applies at once.
    assert proc.stdout.readline().split() == ["ready", "4GB", "15min", "512MB", "off"]
    pgdata = tmp_path / "pgdata"
    assert postmaster_running(pgdata)

    proc.send_signal(how)
    proc.wait(timeout=30)

    deadline = time.monotonic() + 20
    while postmaster_running(pgdata) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not postmaster_running(pgdata), "the embedded server outlived its last holder"
    again = subprocess.run(
        [sys.executable, "-c", HOLD_STORE.replace("time.sleep(120)", ""), str(tmp_path), *TUNED],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.stdout.split() == ["ready", "4GB", "15min", "512MB", "off"]  # the same dir again


def stop_if_running(pgdata: Path) -> None:
    """Fast shutdown of a server a failed test left running."""
    if postmaster_running(pgdata):
        os.kill(int((pgdata / "postmaster.pid").read_text().splitlines()[0]), signal.SIGINT)
        wait_stopped(pgdata)


def wait_stopped(pgdata: Path) -> bool:
    deadline = time.monotonic() + 20
    while postmaster_running(pgdata) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not postmaster_running(pgdata)


def test_a_holder_that_died_without_leaving_no_longer_keeps_the_server_up(
    tmp_path: Path,
) -> None:
    """A holder killed outright, or one that exits without its exit hooks (a uvicorn
    worker, which multiprocessing ends with os._exit), stays on the server's holder list:
    every process drops the dead ones as it leaves, and the next one to attach does too, so
    the server stops with its last live holder."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("ARCHIVIST_DATABASE_URL", None)
    pgdata = tmp_path / "pgdata"
    holders: list[subprocess.Popen[str]] = []

    def hold() -> subprocess.Popen[str]:
        """A process holding the store, once it says so (the next starts after it)."""
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_STORE, str(tmp_path)],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline().split() == ["ready"]
        return holder

    def kill(holder: subprocess.Popen[str]) -> None:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)

    try:
        first, dead = hold(), hold()
        kill(dead)  # after the first attached: only a process leaving can drop it
        assert sorted(json.loads((pgdata / ".handle_pids.json").read_text())) == sorted(
            [first.pid, dead.pid]
        )
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)
        assert wait_stopped(pgdata), "the embedded server outlived its last live holder"

        alone = hold()
        kill(alone)
        assert postmaster_running(pgdata)  # its exit hook never ran
        assert json.loads((pgdata / ".handle_pids.json").read_text()) == [alone.pid]
        later = subprocess.run(
            [sys.executable, "-c", HOLD_STORE.replace("time.sleep(120)", ""), str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert later.stdout.split() == ["ready"]
        assert wait_stopped(pgdata), "the embedded server outlived its last live holder"
        assert json.loads((pgdata / ".handle_pids.json").read_text()) == []
    finally:
        for holder in holders:
            if holder.poll() is None:
                holder.kill()
                holder.wait(timeout=30)
            if holder.stdout is not None:
                holder.stdout.close()
        stop_if_running(pgdata)


def test_a_pending_restart_never_stops_a_server_another_process_holds(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("ARCHIVIST_DATABASE_URL", None)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_STORE, str(tmp_path), "max_connections"],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().split()[0] == "ready"
        pgdata = tmp_path / "pgdata"
        postmaster = (pgdata / "postmaster.pid").read_text().splitlines()[0]
        store = open_store(Settings(data_dir=tmp_path))
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ALTER SYSTEM SET max_connections = 150"))  # needs a restart

        second = subprocess.run(
            [sys.executable, "-c", HOLD_STORE.replace("time.sleep(120)", ""), str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

        assert second.stdout.split() == ["ready"]
        assert (pgdata / "postmaster.pid").read_text().splitlines()[0] == postmaster
        assert holder.poll() is None  # the holder still runs on the same server
    finally:
        holder.terminate()
        holder.wait(timeout=30)


def test_a_server_without_pgvector_fails_with_what_to_install(fresh_db: str) -> None:
    # Shadow the catalogue view, so this real server looks like one without pgvector.
    admin = create_engine(fresh_db)
    with admin.begin() as conn:
        conn.execute(text("CREATE SCHEMA nopgv"))
        conn.execute(
            text(
                "CREATE VIEW nopgv.pg_available_extensions AS SELECT * "
                "FROM pg_catalog.pg_available_extensions WHERE name <> 'vector'"
            )
        )
    admin.dispose()
    url = fresh_db + "&options=-csearch_path%3Dnopgv,pg_catalog,public"
    engine = create_engine(url)

    with pytest.raises(ConfigurationError, match="no pgvector extension; install pgvector"):
        check_pgvector(engine)
    engine.dispose()


def test_bad_database_urls_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="driver 'mysql'"):
        resolve_url(Settings(database_url="mysql://u@h/db", data_dir=tmp_path))
    assert resolve_url(Settings(database_url="postgresql://u@h/db", data_dir=tmp_path)).startswith(
        "postgresql+psycopg://"
    )


def test_a_url_becomes_the_libpq_uri_bulk_reads_connect_with() -> None:
    url = make_url("postgresql+psycopg://ann:p%40ss@db.internal:5433/mem?sslmode=require")
    assert libpq_uri(url) == "postgresql://ann:p%40ss@db.internal:5433/mem?sslmode=require"
    socket = make_url("postgresql+psycopg://postgres:@/archivist?host=/tmp/pg")
    assert libpq_uri(socket) == "postgresql://postgres:@/archivist?host=%2Ftmp%2Fpg"


def test_unreachable_server_is_a_storage_error(tmp_path: Path) -> None:
    settings = Settings(database_url="postgresql://u@127.0.0.1:1/db", data_dir=tmp_path)
    with pytest.raises(StorageError, match="cannot connect"):
        open_store(settings)


def test_schema_is_required_and_upgrade_is_idempotent(pg_url: str, tmp_path: Path) -> None:
    from tests.conftest import _admin, database_url

    _admin(pg_url, "DROP DATABASE IF EXISTS empty_db")
    _admin(pg_url, "CREATE DATABASE empty_db")
    url = database_url(pg_url, "empty_db")
    settings = Settings(database_url=url, data_dir=tmp_path, embedding={"dim": 64})
    store = open_store(settings)

    with pytest.raises(StorageError, match="archivist db upgrade"):
        require_current(store.engine, settings)
    head = head_revision()
    assert upgrade(store.engine, settings) == (None, head)
    assert upgrade(store.engine, settings) == (head, head)
    require_current(store.engine, settings)
    with store.engine.connect() as conn:
        dim = conn.execute(
            text(
                "SELECT atttypmod FROM pg_attribute "
                "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
            )
        ).scalar_one()
        fact = conn.execute(
            text("SELECT value FROM archivist_meta WHERE key = 'embedding_dim'")
        ).scalar_one()
    assert (dim, fact) == (64, "64")
    store.engine.dispose()
    _admin(pg_url, "DROP DATABASE empty_db WITH (FORCE)")


def test_sessions_are_in_utc_beside_the_options_a_url_gives(fresh_db: str) -> None:
    berlin = quote("-c application_name=in-utc-test -c TimeZone=Europe/Berlin")
    separator = "&" if "?" in fresh_db else "?"
    engine = get_engine(f"{fresh_db}{separator}options={berlin}", pool_size=1)
    try:
        with engine.connect() as conn:
            zone, name = (
                conn.exec_driver_sql("SHOW TimeZone").scalar(),
                conn.exec_driver_sql("SHOW application_name").scalar(),
            )
            now = conn.exec_driver_sql("SELECT now()").scalar_one()
    finally:
        engine.dispose()
    assert (zone, name) == ("UTC", "in-utc-test")
    assert now.tzinfo is UTC  # datetime.timezone.utc, no ZoneInfo to look offsets up in
