"""The sharded half of bench/sync.py: one sync unsharded and as N shards on process workers."""

from __future__ import annotations

import contextlib
import io
import math
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import create_engine, text

from storage.server.engine import Store

REPO = Path(__file__).resolve().parent.parent
POOL = "archivist-bench"


def compare_sharded(store: Store, as_of: datetime, shards: int, workers: int) -> None:
    """Copy the loaded database twice, sync one copy in one run, the other in shards."""
    whole_url, sharded_url = copies(store, ("bench_whole", "bench_sharded"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        seconds, report = timed_run(whole_url, as_of, None, workers)
        print(f"unsharded: {seconds:.1f} s wall ({report.written.sessions:,} sessions written)")
        seconds, sharded = timed_run(sharded_url, as_of, shards, workers)
        written = sharded.totals.get("written", {}).get("sessions", 0)
        states = ", ".join(f"{s.shard} {s.state}" for s in sharded.shards)
        print(
            f"{shards} shards on {workers} process workers: {seconds:.1f} s wall "
            f"({written:,} sessions written; {states})"
        )


def copies(store: Store, names: tuple[str, ...]) -> list[str]:
    """New databases made from the store's (its connections closed first)."""
    url = store.engine.url
    store.engine.dispose()
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    made = []
    with admin.connect() as conn:
        for name in names:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            conn.execute(text(f'CREATE DATABASE {name} TEMPLATE "{url.database}"'))
            made.append(url.set(database=name).render_as_string(hide_password=False))
    admin.dispose()
    return made


def timed_run(url: str, as_of: datetime, shards: int | None, workers: int) -> tuple[float, Any]:
    """Wall time and report of one sync of the database at ``url``."""
    os.environ["ARCHIVIST_DATABASE_URL"] = url
    if shards is None:
        from flows.daily_sync import memory_sync_daily

        started = time.perf_counter()
        whole = memory_sync_daily(as_of=as_of)
        return time.perf_counter() - started, whole
    from flows.sharded_run import memory_sharded_run

    deploy()
    procs = [start_worker(f"bench-{i}", math.ceil(shards / workers)) for i in range(workers)]
    try:
        wait_for_workers(workers)
        started = time.perf_counter()
        sharded = memory_sharded_run(shards=shards, as_of=as_of, poll_seconds=0.5)
        return time.perf_counter() - started, sharded
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)


def deploy() -> None:
    """The sync and the parent, deployed from this checkout to a process pool."""
    import asyncio

    from prefect import Flow, get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from flows.daily_sync import memory_sync_daily
    from flows.sharded_run import memory_sharded_run

    async def create_pool() -> None:
        async with get_client() as client:
            await client.create_work_pool(WorkPoolCreate(name=POOL, type="process"), overwrite=True)

    asyncio.run(create_pool())
    for flow, entrypoint in (
        (memory_sync_daily, "flows/daily_sync.py:memory_sync_daily"),
        (memory_sharded_run, "flows/sharded_run.py:memory_sharded_run"),
    ):
        source = cast(Flow[..., Any], flow.from_source(source=str(REPO), entrypoint=entrypoint))
        with contextlib.redirect_stdout(io.StringIO()):  # its table of deployments
            source.deploy(
                name=flow.name, work_pool_name=POOL, print_next_steps=False, ignore_warnings=True
            )


def start_worker(name: str, limit: int) -> subprocess.Popen[bytes]:
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ) | {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_WORKER_QUERY_SECONDS": "1",
    }
    command = [sys.executable, "-m", "prefect", "worker", "start", "--pool", POOL]
    return subprocess.Popen(
        [*command, "--name", name, "--limit", str(limit)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for_workers(count: int) -> None:
    """Until ``count`` workers of the pool have sent a heartbeat."""
    import asyncio

    from prefect import get_client

    async def online() -> int:
        async with get_client() as client:
            return len(await client.read_workers_for_work_pool(POOL))

    deadline = time.monotonic() + 120
    while asyncio.run(online()) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"{count} workers did not come up in 120 s")
        time.sleep(0.5)
