"""memory-sharded-run through real deployment runs on two real process workers.

The shards run as runs of the ``memory-sync-daily`` deployment in a process work pool
of the session's Prefect server, picked up by two ``prefect worker`` subprocesses that
see the same store; the parent runs in this process and waits for them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import pytest
from prefect import Flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.settings import PREFECT_API_URL
from sqlalchemy import text

from flows.daily_sync import memory_sync_daily
from flows.sharded_run import memory_sharded_run
from storage.kernel.shards import Shard
from storage.server.engine import Store
from tasks.shards import ShardedReport
from tests.helpers import counts, files, snapshot
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
PROCESSED = (
    "SELECT s.namespace FROM processed_sessions p JOIN chat_sessions s ON s.id = p.session_id"
)


def store_env(store: Store) -> dict[str, str]:
    settings = store.settings
    assert settings.database_url is not None
    return {
        "ARCHIVIST_DATABASE_URL": settings.database_url.get_secret_value(),
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
        source.deploy(
            name=flow.name, work_pool_name=POOL, print_next_steps=False, ignore_warnings=True
        )


class Workers:
    """``prefect worker start`` subprocesses, each leading its own process group."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env, self.log_dir, self.procs = env, log_dir, list[subprocess.Popen[bytes]]()

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
        """As when the worker's machine dies: the worker and the flow run it started (which
        Prefect puts in a session of its own, so it would outlive its worker)."""
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            os.killpg(flow_run_pid, signal.SIGKILL)
        except ProcessLookupError:  # it was in the worker's group, gone with it
            pass
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def workers(
    new_store: Callable[[str], Store], deployed: None, tmp_path: Path
) -> Iterator[tuple[Store, Workers]]:
    """A store for the shards, and workers (not yet started) that run flows against it."""
    store = new_store("sharded")
    # This process's settings (the tests' embedder among them), pointed at the shards' store
    env = (
        dict(os.environ)
        | store_env(store)
        | {
            "PREFECT_API_URL": str(PREFECT_API_URL.value()),
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )
    pool = Workers(env, tmp_path)
    yield store, pool
    pool.stop_all()


def unsharded(
    new_store: Callable[[str], Store], monkeypatch: pytest.MonkeyPatch, rounds: int = 2
) -> Store:
    """One memory-sync-daily run of the same data, in this process."""
    whole = new_store("whole")
    fill(whole, rounds)
    with monkeypatch.context() as patch:
        for key, value in store_env(whole).items():
            patch.setenv(key, value)
        memory_sync_daily(as_of=AS_OF)
    return whole


def run_parent(
    store: Store, monkeypatch: pytest.MonkeyPatch, timeout_minutes: float
) -> ShardedReport:
    with monkeypatch.context() as patch:
        for key, value in store_env(store).items():
            patch.setenv(key, value)
        return memory_sharded_run(
            shards=4, as_of=AS_OF, timeout_minutes=timeout_minutes, poll_seconds=0.5
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


def a_shard_midway(store: Store) -> int | None:
    """The process of a running shard that has written some of its sessions, if any."""
    with store.engine.connect() as conn:
        running = [(Shard.parse(r.shard), r.pid) for r in conn.execute(text(RUNNING_SHARDS))]
    done = processed(store)
    return next((pid for shard, pid in running if any(shard.holds(ns) for ns in done)), None)


def test_a_worker_killed_midway_loses_nothing_and_the_next_run_finishes(
    workers: tuple[Store, Workers],
    new_store: Callable[[str], Store],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = unsharded(new_store, monkeypatch, rounds=20)  # 280 sessions, 70 a shard
    sharded, pool = workers
    pool.env["ARCHIVIST_SYNC__BATCH_SIZE"] = "2"  # a commit every 2 sessions: room for a kill
    fill(sharded, rounds=20)
    total = counts(whole)["processed_sessions"]
    first = pool.start("worker-a", limit=1)  # one shard at a time: the kill hits one
    with ThreadPoolExecutor(1) as parent:
        failed = parent.submit(run_parent, sharded, monkeypatch, 10)
        deadline = time.monotonic() + 300
        while (victim := a_shard_midway(sharded)) is None:
            assert time.monotonic() < deadline and not failed.done(), "no shard started"
            time.sleep(0.02)
        pool.kill(first, victim)  # the worker and the flow run it started, mid-write
        landed = len(processed(sharded))
        pool.start("worker-b")  # takes the shards still waiting
        with pytest.raises(RuntimeError, match=r"shards not completed: \d/4 \(Crashed"):
            failed.result(timeout=600)
    assert 0 < landed < total, "the kill did not land midway"
    with sharded.engine.connect() as conn:
        crashed = conn.execute(text(SYNC_RUNS), {"status": "crashed"}).scalar_one()
    assert crashed >= 1  # the killed shards' runs, found dead by their process id

    report = run_parent(sharded, monkeypatch, timeout_minutes=10)

    assert all(s.completed for s in report.shards)
    assert snapshot(sharded) == snapshot(whole)  # nothing lost, nothing twice
    assert counts(sharded) == counts(whole)
    assert files(memory_root(sharded), drop_ids=True) == files(memory_root(whole), drop_ids=True)
