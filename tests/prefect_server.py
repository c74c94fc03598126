"""The session's Prefect test server: Prefect's own ``prefect_test_harness``, started on a
database its first worker's server migrated.

Each pytest-xdist worker starts a harness of its own, and each harness's server migrated a
new SQLite database from nothing at start (alembic: 114 migrations, then the block types
registered): about 6 s of the server's CPU, half of it the migrations from nothing. The
workers now take a file lock shared by the run in turns: the first starts its harness as
before and copies the database its server made (a consistent copy, through SQLite's backup)
next to the lock; every later one copies that copy under the lock and starts its harness on
it after (the later ones' servers start side by side), and its server's start finds the
migrations done (3 s of the server's CPU). The server is the same real Prefect server,
started by the same harness, which still runs the migrations at start (at head, they change
nothing) and registers the block types; the harness's empty folder comes with a
database in it (the harness takes no folder: its ``mkdtemp`` is replaced while it starts).
The server's process is started as Prefect starts it, with two changes that apply to it
alone: it runs in Prefect's test mode (``SERVER_ENVIRONMENT``), and through
``tests/prefect_server_main.py``, which collects Python's garbage in a thread of its own
(a collection in the event loop's thread could stop the server for a whole SQLite busy
timeout; that file says how). Nothing is shared at run time: each worker's server has its
own database. The harness yields that migrated database (outside pytest-xdist, a copy of its
own server's, taken right after its start), which the tests of ``archivist prefect start``
put in each user's Prefect home.

Measured (2026-11-28, the harness alone, the server's CPU until it answered): 5.4-6.8 s on
a new database, 2.9-3.0 s on a copy.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from tests import shared_run

if TYPE_CHECKING:
    from prefect.server.api.server import SubprocessASGIServer

# The server waits at most 30 s for SQLite's write lock instead of 60 (Prefect's test mode,
# which its server reads for its database timeouts alone). Some runs of the sharded-run
# file stalled for one such wait: a worker's heartbeat answered 503 after exactly 60 s, the
# workers' and the parent's requests held up meanwhile (1 full run in 7 on 2026-11-29,
# 80.5 s instead of 25-30 s for the test; 1 run in 12 of the file alone). The cause was the
# collector in the event loop's thread, now moved (SERVER_MAIN); the shorter wait stays for
# any other, and the request that gives up is retried by Prefect's client.
#
# And no telemetry, as the product's own server (deployments/local_prefect.py): Prefect's
# server sends it by default, and here tried to, every time (a failed name lookup logged).
#
# Its event persister writes what it has received every 0.5 s rather than every 5 s (or
# every 20 events): the erasure tests wait until every event of their runs is stored before
# they scan, and each waited up to 5 s with nothing to do (tests/flows/test_erasure.py
# alone, its two scans: 14.9 and 14.8 s -> 11.6 and 13.0 s).
SERVER_ENVIRONMENT = {
    "PREFECT_TESTING_UNIT_TEST_MODE": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "0.5",
}
# What Prefect's own start of the server adds to its environment, and the app it serves.
PREFECT_SERVER_ENVIRONMENT = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
}
SERVER_APP = "prefect.server.api.server:create_app"
# uvicorn, its collector in a thread of its own (see that file).
SERVER_MAIN = Path(__file__).with_name("prefect_server_main.py")
# The harness's database, in the folder it makes (prefect.testing.utilities).
DATABASE = "prefect-test.db"
TEMPLATE = "prefect-template.db"


@contextmanager
def harness(shared: Path | None, timeout: int) -> Iterator[Path]:
    """``prefect_test_harness(timeout)``, its server's process in Prefect's test mode; with
    ``shared`` (a folder every worker of the run sees), started on a copy of the first
    worker's migrated database. Yields a copy of a database as a server's first start left
    it (migrated, the block types registered, nothing run): the template, else a copy of
    this server's taken right after its start."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.testing import utilities

    with ExitStack() as stack:

        def start() -> None:
            with mock.patch.object(SubprocessASGIServer, "_run_uvicorn_command", _launch):
                stack.enter_context(utilities.prefect_test_harness(server_startup_timeout=timeout))

        if shared is None:
            start()
            template = Path(stack.enter_context(tempfile.TemporaryDirectory())) / TEMPLATE
            _copy(_database(), template)
        else:
            template = shared / TEMPLATE
            folder: str | None = None
            with shared_run.locked(shared / "prefect-template.lock"):
                if template.exists():  # copied under the lock, started outside it
                    folder = tempfile.mkdtemp()  # where the harness would have made its own
                    shutil.copyfile(template, Path(folder) / DATABASE)
                else:  # the first: the others wait for its database
                    start()
                    _copy(_database(), template)
            if folder is not None:
                with mock.patch.object(utilities, "mkdtemp", lambda: folder):
                    start()
        yield template


def _launch(server: SubprocessASGIServer) -> subprocess.Popen[Any]:
    """The harness's server process as Prefect starts it (``_run_uvicorn_command`` of the
    pinned Prefect: the same uvicorn arguments and environment), run through SERVER_MAIN and
    with SERVER_ENVIRONMENT; this process's settings keep Prefect's defaults."""
    import prefect
    from prefect.settings import get_current_settings

    command = [sys.executable, "-P", str(SERVER_MAIN)]  # -P: tests/ stays off its sys.path
    command += ["--app-dir", str(prefect.__module_path__.parent), "--factory", SERVER_APP]
    command += ["--host", "127.0.0.1", "--port", str(server.port)]
    command += ["--log-level", "error", "--lifespan", "on"]
    settings = get_current_settings().to_environment_variables(exclude_unset=True)
    env = {**os.environ, **PREFECT_SERVER_ENVIRONMENT, **settings, **SERVER_ENVIRONMENT}
    return subprocess.Popen(command, env=env)


def _database() -> Path:
    """The running harness's SQLite file."""
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    url = PREFECT_SERVER_DATABASE_CONNECTION_URL.value()
    assert url is not None
    return Path(url.split(":///", 1)[1])


def _copy(source: Path, target: Path) -> None:
    """A consistent copy of a database its server has open (in WAL mode: the file alone may
    lack the latest tables), made whole before it takes the target's name."""
    part = target.with_suffix(".part")
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(part)) as dst:
        src.backup(dst)
    os.replace(part, target)
