"""The server a scale run builds its stores on, in the run's directory (kept for ``--reuse``):
the embedded one, or a standalone PostgreSQL over TCP with password authentication
(``--tcp``, ``storage.server.standalone``), tuned as the embedded one is but for its cache,
a quarter of the machine's memory."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from storage.kernel.settings import Settings
from storage.server.engine import EMBEDDED_SETTINGS, libpq_uri, open_store, tune_embedded
from storage.server.sizing import SERVER_CEILING_MB, machine_memory, shared_buffers
from storage.server.standalone import TcpServer, restart_tcp_server, start_tcp_server


@dataclass
class BenchServer:
    """A running server: its superuser's URL of the ``postgres`` database."""

    admin: str
    tcp: TcpServer | None

    def url(self, database: str) -> str:
        return make_url(self.admin).set(database=database).render_as_string(hide_password=False)

    def ensure_database(self, database: str) -> str:
        """The database's URL, made first if it does not exist."""
        engine = create_engine(self.admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": database}
            ).first()
            if exists is None:
                conn.execute(text(f'CREATE DATABASE "{database}"'))
        engine.dispose()
        return self.url(database)

    def copy_database(self, source: str, target: str) -> str:
        """A fresh copy of ``source`` (files copied, not WAL-logged: fast for gigabytes)."""
        engine = create_engine(self.admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{target}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{target}" TEMPLATE "{source}" STRATEGY FILE_COPY'))
        engine.dispose()
        return self.url(target)

    def drop_database(self, database: str) -> None:
        engine = create_engine(self.admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        engine.dispose()

    def stop(self) -> None:
        if self.tcp is not None:
            self.tcp.stop()

    def cpu_seconds(self) -> float | None:
        """CPU time the server's processes have used so far (Linux, ``--tcp`` only: the
        postmaster and its children, from /proc, and the children that have exited, which
        the postmaster's own counts keep: an autovacuum worker ending within a phase took
        its CPU out of the sum); None where it cannot be read."""
        if self.tcp is None:
            return None
        try:
            postmaster = int((self.tcp.data / "postmaster.pid").read_text().split()[0])
            ticks = 0
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                with contextlib.suppress(OSError):
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if int(entry.name) == postmaster or int(fields[1]) == postmaster:
                        ticks += int(fields[11]) + int(fields[12])  # utime, stime
                    if int(entry.name) == postmaster:
                        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
            return ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None


def open_server(workdir: Path, *, tcp: bool) -> BenchServer:
    """The run's server, started (or made) in ``workdir``; over TCP with the embedded
    server's settings but the cache, sized for the machine as a team's server would be
    (``server_settings``), written again at every start (a reused store follows)."""
    if not tcp:
        store = open_store(Settings(data_dir=workdir / "embedded"))
        admin = store.engine.url.set(database="postgres")
        return BenchServer(admin.render_as_string(hide_password=False), None)
    data, secret = workdir / "tcp", workdir / "tcp.json"
    if secret.exists():
        server = restart_tcp_server(data, json.loads(secret.read_text())["password"])
    else:
        server = start_tcp_server(data)
        secret.write_text(json.dumps({"password": server.password}))
        secret.chmod(0o600)
    if tune_embedded(libpq_uri(make_url(server.url())), server_settings()):
        server.stop()  # shared_buffers waits for a restart
        server = restart_tcp_server(data, server.password)
    return BenchServer(server.url(), server)


def server_settings() -> dict[str, str]:
    """The embedded server's settings, with ``shared_buffers`` a quarter of the machine's
    memory (``storage.server.sizing``) instead of a laptop's 512 MB."""
    cache = shared_buffers(machine_memory(), SERVER_CEILING_MB)
    return EMBEDDED_SETTINGS | {"shared_buffers": cache}
