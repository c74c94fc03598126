"""memory-sharded-run through real deployment runs on two real process workers.

The shards run as runs of the ``memory-sync-daily`` deployment in a process work pool
of the session's Prefect server, picked up by two ``prefect worker`` subprocesses that
see the same store; the parent runs in this process and waits for them.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import httpx
import psutil
import pytest
from prefect import Flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.settings import PREFECT_API_URL
from sqlalchemy import text

from flows.daily_sync import memory_sync_daily
from flows.sharded_run import memory_sharded_run
from storage.kernel.settings import Settings
from storage.kernel.shards import Shard
from storage.server.engine import Store, open_store
from tasks.shards import ShardedReport
from tests.conftest import Clones, database_url
from tests.helpers import counts, files, new_key, snapshot
from tests.serving.conftest import ARCHIVIST, LISTENING, wait_for_line
from tests.tasks.sync.test_sync_shards import AS_OF, fill

REPO = Path(__file__).resolve().parents[2]
POOL = "archivist-shards-test"
SHARD_RUNS = (
    "SELECT parameters->>'shard' AS shard, status, pid FROM runs WHERE flow = 'memory-sync-daily'"
)
SYNC_RUNS = "SELECT count(*) FROM runs WHERE flow = 'memory-sync-daily' AND status = :status"
RUNNING_SHARDS = (
    "SELECT parameters->>'shard' AS shard, pid FROM runs "
    "WHERE flow = 'memory-sync-daily' AND status = 'running'"
)
# The URLs a worker of a store with roles is not given (the owner's, serving's, its key).
OTHER_ROLES = (
    "ARCHIVIST_DATABASE_URL",
    "ARCHIVIST_SERVING__DATABASE_URL",
    "ARCHIVIST_SERVING__KEY",
)
# How often a kill test looks for a shard midway (three statements, and with them the
# test's and the server's CPU). The shards wait in their last batch until the kill
# (last_sessions_held), so a slower look still finds one midway: polled every 3 s, the kills
# landed at 45 of 50 and 85 of 90 sessions.
MIDWAY_POLL_SECONDS = 0.5
# The kill tests split the 140 sessions in two shards (50 and 90 sessions) and commit every
# 5 sessions: room for a kill midway in either shard, for half the flow-run processes (each
# ~3 s of CPU, mostly imports) and a third of the Prefect task runs of 4 shards committing
# every 2 sessions. Four shards on two workers are the first test's.
KILL_SHARDS = 2
KILL_BATCH_SIZE = "5"
PROCESSED = (
    "SELECT s.namespace FROM processed_sessions p JOIN chat_sessions s ON s.id = p.session_id"
)


def store_env(store: Store) -> dict[str, str]:
    """What a worker of this store is given: the pipeline's URL alone where the store has
    one (a server with roles), else the owner's."""
    settings = store.settings
    pipeline = settings.pipeline.database_url
    url = pipeline if pipeline is not None else settings.database_url
    assert url is not None
    variable = "ARCHIVIST_DATABASE_URL" if pipeline is None else "ARCHIVIST_PIPELINE__DATABASE_URL"
    return {
        variable: url.get_secret_value(),
        "ARCHIVIST_DATA_DIR": str(settings.data_dir),
        "ARCHIVIST_MEMORY_ROOT": settings.memory_root_url,
        "ARCHIVIST_TIMEZONE": "UTC",
    }


async def create_pool() -> None:
    async with get_client() as client:
        await client.create_work_pool(WorkPoolCreate(name=POOL, type="process"), overwrite=True)


@pytest.fixture(scope="module")
def deployed(prefect_harness: None) -> None:
    """memory-sync-daily and memory-sharded-run, deployed to a pool of their own."""
    asyncio.run(create_pool())
    for flow, entrypoint in (
        (memory_sync_daily, "flows/daily_sync.py:memory_sync_daily"),
        (memory_sharded_run, "flows/sharded_run.py:memory_sharded_run"),
    ):
        # from_source is sync-compatible: called from sync code it returns the flow.
        source = cast(Flow[..., Any], flow.from_source(source=str(REPO), entrypoint=entrypoint))
        # The command is Prefect's engine in this interpreter, which loads the flow from the
        # source as before: without one the worker starts Prefect's workspace supervisor,
        # which imports Prefect to prepare the workspace and then execs the same engine
        # (Prefect imported twice). A run of this file alone, by process accounting: 34.5 s
        # of CPU in 12 flow-run processes with the supervisor, 21.4 s in 11 without.
        source.deploy(
            name=flow.name,
            work_pool_name=POOL,
            print_next_steps=False,
            ignore_warnings=True,
            job_variables={"command": f"{sys.executable} -m prefect.engine"},
        )


class Workers:
    """``prefect worker start`` subprocesses, each leading its own process group."""

    def __init__(self, env: dict[str, str], log_dir: Path, store: Store) -> None:
        self.env, self.log_dir, self.procs = env, log_dir, list[subprocess.Popen[bytes]]()
        self.store = store

    def start(self, name: str, limit: int = 2) -> subprocess.Popen[bytes]:
        log = (self.log_dir / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            # --limit: runs at once, so that one worker cannot take all 4 shards
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", POOL, "--name", name]
            + ["--limit", str(limit)],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its flow-run processes share its group: a kill takes all
        )
        self.procs.append(proc)
        return proc

    def wait_started(self, *names: str) -> None:
        """Until each worker says it polls: then runs created later are shared between them."""
        deadline = time.monotonic() + 180
        for name in names:
            log = self.log_dir / f"{name}.log"
            while f"Worker '{name}' started!" not in log.read_text(errors="replace"):
                assert time.monotonic() < deadline, f"{name} did not start"
                time.sleep(0.2)

    def kill(self, proc: subprocess.Popen[bytes], flow_run_pid: int) -> None:
        """As when the worker's machine dies: the worker and the flow run it started (in the
        worker's process group with this file's deployments; a run that Prefect starts in a
        session of its own, as it does without a command, would outlive its worker)."""
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            os.killpg(flow_run_pid, signal.SIGKILL)
        except ProcessLookupError:  # it was in the worker's group, gone with it
            pass
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        """Ask the workers to stop, then kill those that have not within 5 s: a worker
        sometimes ignores SIGTERM, and the test is over (nothing is checked after this)."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


@pytest.fixture
def workers(
    new_store: Callable[[str], Store], deployed: None, tmp_path: Path
) -> Iterator[tuple[Store, Workers]]:
    """A store for the shards, and workers (not yet started) that run flows against it."""
    pool = worker_pool(new_store("sharded"), tmp_path)
    yield pool.store, pool
    pool.stop_all()


def worker_pool(store: Store, log_dir: Path) -> Workers:
    """Workers (not yet started) with this process's settings (the tests' embedder among
    them), pointed at ``store``."""
    env = {k: v for k, v in os.environ.items() if k not in OTHER_ROLES}
    env |= store_env(store) | {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    return Workers(env, log_dir, store)


def unsharded(new_store: Callable[[str], Store], monkeypatch: pytest.MonkeyPatch) -> Store:
    """One memory-sync-daily run of the same data, in this process."""
    whole = new_store("whole")
    fill(whole)
    with monkeypatch.context() as patch:
        for key, value in store_env(whole).items():
            patch.setenv(key, value)
        memory_sync_daily(as_of=AS_OF)
    return whole


@pytest.fixture(scope="module")
def whole_of_140(
    pg_url: str, clones: Clones, prefect_harness: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """What the two kill tests compare their runs with: 140 sessions (10 rounds), synced by
    one memory-sync-daily run in this process. Made once for both (they only read it)."""
    name, folder = clones.take(), tmp_path_factory.mktemp("whole")
    whole = open_store(
        Settings(
            database_url=database_url(pg_url, name),
            data_dir=folder,
            memory_root=str(folder / "memory"),
        )
    )
    fill(whole, rounds=10)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in store_env(whole).items():
            patch.setenv(key, value)
        memory_sync_daily(as_of=AS_OF)
    yield whole
    clones.give_back(name)


def run_parent(
    store: Store, monkeypatch: pytest.MonkeyPatch, timeout_minutes: float, shards: int = 4
) -> ShardedReport:
    with monkeypatch.context() as patch:
        for key in OTHER_ROLES:
            patch.delenv(key, raising=False)
        for key, value in store_env(store).items():
            patch.setenv(key, value)
        return memory_sharded_run(
            shards=shards, as_of=AS_OF, timeout_minutes=timeout_minutes, poll_seconds=0.5
        )


def memory_root(store: Store) -> Path:
    return Path(store.settings.memory_root_url)


def test_four_shards_on_two_workers_write_what_one_run_writes(
    workers: tuple[Store, Workers],
    new_store: Callable[[str], Store],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = unsharded(new_store, monkeypatch)
    sharded, pool = workers
    fill(sharded)
    pool.start("worker-a"), pool.start("worker-b")
    pool.wait_started("worker-a", "worker-b")

    report = run_parent(sharded, monkeypatch, timeout_minutes=10)

    assert [s.shard for s in report.shards] == [str(s) for s in Shard.all(4)]
    assert all(s.completed for s in report.shards)
    assert report.totals["written"]["sessions"] == counts(whole)["processed_sessions"]
    with sharded.engine.connect() as conn:
        shard_runs = conn.execute(text(SHARD_RUNS)).all()
    assert sorted(r.shard for r in shard_runs) == [str(s) for s in Shard.all(4)]
    assert all(r.status == "completed" for r in shard_runs)
    # each shard ran in a process of its own that a worker started, none in this one
    assert len({r.pid for r in shard_runs}) == 4 and os.getpid() not in {r.pid for r in shard_runs}
    assert snapshot(sharded) == snapshot(whole)
    assert files(memory_root(sharded), drop_ids=True) == files(memory_root(whole), drop_ids=True)


def processed(store: Store) -> list[str]:
    with store.engine.connect() as conn:
        return list(conn.execute(text(PROCESSED)).scalars())


def sessions_of(shard: Shard, namespaces: list[str]) -> int:
    return sum(shard.holds(ns) for ns in namespaces)


def a_shard_midway(store: Store) -> tuple[Shard, int] | None:
    """A running shard that has written some but not all of its sessions, and its process,
    if any."""
    with store.engine.connect() as conn:
        running = [(Shard.parse(r.shard), r.pid) for r in conn.execute(text(RUNNING_SHARDS))]
        stored = list(conn.execute(text("SELECT namespace FROM chat_sessions")).scalars())
    done = processed(store)
    return next(
        (
            (shard, pid)
            for shard, pid in running
            if 0 < sessions_of(shard, done) < sessions_of(shard, stored)
        ),
        None,
    )


def wait_for_a_shard_midway(
    store: Store, parent: Future[ShardedReport], each_look: Callable[[], None] = lambda: None
) -> tuple[Shard, int]:
    """A shard midway and its process (``a_shard_midway``), looked for every
    MIDWAY_POLL_SECONDS (``each_look`` after each miss) while the parent run goes on, for at
    most 300 s."""
    deadline = time.monotonic() + 300
    while (victim := a_shard_midway(store)) is None:
        assert time.monotonic() < deadline and not parent.done(), "no shard started"
        each_look()
        time.sleep(MIDWAY_POLL_SECONDS)
    return victim


@contextmanager
def last_sessions_held(store: Store, shards: int) -> Iterator[None]:
    """Each shard's last session (a shard's sync takes its sessions by namespace and id)
    locked FOR UPDATE by this process until the block ends: a shard commits every batch
    before its last, then waits inside the last one's transaction (its first row that
    references that session waits for the lock), so a kill finds it midway however fast the
    batches go. Without it a shard of 50 sessions could write all of them in a quarter of a
    second: a kill that saw it midway landed after its end (in one of two full runs on
    2026-11-29, once the tests' Prefect server no longer stalled)."""
    with store.engine.connect() as conn, conn.begin():
        ordered = conn.execute(
            text("SELECT id, namespace FROM chat_sessions ORDER BY namespace, id")
        )
        rows = ordered.all()
        last = [[r.id for r in rows if shard.holds(r.namespace)][-1] for shard in Shard.all(shards)]
        conn.execute(
            text("SELECT id FROM chat_sessions WHERE id = ANY(:ids) FOR UPDATE"), {"ids": last}
        )
        yield


def only_crashed(shard: Shard) -> str:
    """What the parent run fails with when the killed shard alone did not complete."""
    return rf"shards not completed: {re.escape(str(shard))} \(Crashed[^;]*\); run"


def killed_midway(store: Store, shard: Shard, total: int) -> None:
    """After the kill: the killed shard had written some but not all of its sessions, and
    the run as a whole some but not all."""
    done = processed(store)
    with store.engine.connect() as conn:
        stored = list(conn.execute(text("SELECT namespace FROM chat_sessions")).scalars())
    assert 0 < sessions_of(shard, done) < sessions_of(shard, stored), "the kill missed midway"
    assert 0 < len(done) < total, "the kill did not land midway"


def test_a_worker_killed_midway_loses_nothing_and_the_next_run_finishes(
    workers: tuple[Store, Workers], whole_of_140: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 140 sessions in 2 shards, a commit every 5 sessions: 10 and 18 batches, room for a
    # kill midway (as over TCP below). Each batch is a Prefect task run of its own.
    whole = whole_of_140
    sharded, pool = workers
    pool.env["ARCHIVIST_SYNC__BATCH_SIZE"] = KILL_BATCH_SIZE
    fill(sharded, rounds=10)
    total = counts(whole)["processed_sessions"]
    first = pool.start("worker-a", limit=1)  # one shard at a time: the kill hits one
    with ThreadPoolExecutor(1) as parent:
        with last_sessions_held(sharded, KILL_SHARDS):
            failed = parent.submit(run_parent, sharded, monkeypatch, 10, KILL_SHARDS)
            shard, pid = wait_for_a_shard_midway(sharded, failed)
            pool.kill(first, pid)  # the worker and the flow run it started, mid-write
            killed_midway(sharded, shard, total)
        pool.start("worker-b")  # takes the shard still waiting
        with pytest.raises(RuntimeError, match=only_crashed(shard)):
            failed.result(timeout=600)
    with sharded.engine.connect() as conn:
        crashed = conn.execute(text(SYNC_RUNS), {"status": "crashed"}).scalar_one()
    assert crashed == 1  # the killed shard's run, found dead by its process id

    report = run_parent(sharded, monkeypatch, 10, KILL_SHARDS)

    assert all(s.completed for s in report.shards)
    assert snapshot(sharded) == snapshot(whole)  # nothing lost, nothing twice
    assert counts(sharded) == counts(whole)
    assert files(memory_root(sharded), drop_ids=True) == files(memory_root(whole), drop_ids=True)


@contextmanager
def api_process(store: Store, log: Path) -> Iterator[str]:
    """``archivist api`` as a process of its own, given the serving role's URL alone."""
    settings = store.settings
    assert settings.serving.database_url is not None
    env = {k: v for k, v in os.environ.items() if k not in OTHER_ROLES}
    env |= {
        "ARCHIVIST_SERVING__DATABASE_URL": settings.serving.database_url.get_secret_value(),
        "ARCHIVIST_DATA_DIR": str(settings.data_dir),
        "ARCHIVIST_MEMORY_ROOT": settings.memory_root_url,
        "ARCHIVIST_TIMEZONE": "UTC",
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [ARCHIVIST, "api", "--port", "0"], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        yield wait_for_line(process, log, LISTENING)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def started_by(workers: list[subprocess.Popen[bytes]], pid: int) -> subprocess.Popen[bytes]:
    """The worker whose process started flow run ``pid``."""
    ancestors = {parent.pid for parent in psutil.Process(pid).parents()}
    [worker] = [w for w in workers if w.pid in ancestors]
    return worker


def logins(store: Store) -> set[str]:
    """The roles connected to the store's database now."""
    with store.engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT DISTINCT usename FROM pg_stat_activity "
                "WHERE datname = current_database() AND usename IS NOT NULL"
            )
        )
        return set(found.scalars())


def search(client: httpx.Client, namespace: str) -> list[dict[str, Any]]:
    answer = client.post(
        f"/v1/namespaces/{namespace}/search",
        json={"query": "when is the budget review?", "limit": 50},
    )
    assert answer.status_code == 200, answer.text
    return list(answer.json()["hits"])


@pytest.fixture
def tcp_workers(
    tcp_settings: Settings, deployed: None, tmp_path: Path
) -> Iterator[tuple[Store, Workers]]:
    """The production topology on one machine: a store on the server over TCP with
    passwords, workers that get the pipeline's URL alone (and run the flows in processes
    of their own), this process as the parent run with the same URL."""
    pool = worker_pool(open_store(tcp_settings), tmp_path)
    yield pool.store, pool
    pool.stop_all()


def test_over_tcp_a_worker_killed_midway_loses_nothing_and_the_api_keeps_answering(
    tcp_workers: tuple[Store, Workers],
    whole_of_140: Store,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Two process workers of one pool, the API beside them, each with its own role's URL:
    a kill -9 of one worker (and the flow run it started) midway through the two-worker
    sync, then a re-run, writes what one run writes, and the API answers throughout with
    one key's namespace only."""
    whole = whole_of_140  # 140 sessions: 50 and 90 in the two shards
    store, pool = tcp_workers
    pool.env["ARCHIVIST_SYNC__BATCH_SIZE"] = KILL_BATCH_SIZE  # room for a kill midway
    fill(store, rounds=10)
    total = counts(whole)["processed_sessions"]
    key = new_key(store, "user-1")
    seen_roles: set[str] = set()
    with (
        api_process(store, tmp_path / "api.log") as url,
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as client,
    ):
        health = client.get("/v1/health").json()
        started = [pool.start(name, limit=1) for name in ("worker-a", "worker-b")]
        pool.wait_started("worker-a", "worker-b")
        with ThreadPoolExecutor(1) as parent:
            with last_sessions_held(store, KILL_SHARDS):
                failed = parent.submit(run_parent, store, monkeypatch, 10, KILL_SHARDS)
                shard, pid = wait_for_a_shard_midway(
                    store, failed, each_look=lambda: seen_roles.update(logins(store))
                )
                # the worker that started that flow run, and the flow run, mid-write
                pool.kill(started_by(started, pid), pid)
                killed_midway(store, shard, total)
            during = search(client, "user-1")
            with pytest.raises(RuntimeError, match=only_crashed(shard)):
                failed.result(timeout=600)

        report = run_parent(store, monkeypatch, 10, KILL_SHARDS)  # the other worker alone
        seen_roles |= logins(store)
        after = search(client, "user-1")
        other = client.post("/v1/namespaces/user-10/search", json={"query": "budget review"})

    assert health["role"] == "archivist_serving" and health["row_level_security"] is True
    assert all(s.completed for s in report.shards)
    assert snapshot(store) == snapshot(whole)  # nothing lost, nothing twice
    assert counts(store) == counts(whole)
    assert files(memory_root(store), drop_ids=True) == files(memory_root(whole), drop_ids=True)
    with store.engine.connect() as conn:
        sessions = conn.execute(text("SELECT id, namespace FROM chat_sessions")).all()
    namespace_of: dict[str, str] = {row[0]: row[1] for row in sessions}
    assert after and {namespace_of[h["session_id"]] for h in after} == {"user-1"}
    assert {namespace_of[h["session_id"]] for h in during} <= {"user-1"}
    assert other.status_code == 403  # a look-alike namespace with this key
    # Nobody connected as the owner (the superuser): each process held its own role's URL.
    assert seen_roles == {"archivist_pipeline", "archivist_serving"}
