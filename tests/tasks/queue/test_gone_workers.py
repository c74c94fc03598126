"""A drainer killed while holding claims: reported at once, reclaimed at once, run once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from deployments.commands.queue import show_stats
from storage.embedding import HashingEmbedder
from storage.kernel.settings import Settings
from storage.queue import table as queue
from storage.server.engine import Store
from tasks.queue import drain_once
from tasks.watchdog import store_checks

FACTS = [f"fact {n}" for n in range(20)]  # one claim batch

# A real drainer whose embedding service never answers: it claims a batch, says so, and
# hangs inside the batch's transaction until it is killed.
HANGING_DRAINER = """
import sys
import threading
from datetime import datetime

from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tasks.queue import drain_once


class Hanging:
    name = "hanging"
    dim = 384

    def embed(self, texts):
        print(f"embedding {len(texts)}", flush=True)
        threading.Event().wait()


url, data_dir, as_of = sys.argv[1:4]
settings = Settings(database_url=url, data_dir=data_dir, memory_root=data_dir)
engine = open_store(settings).engine
drain_once(engine, Hanging(), settings, "doomed", datetime.fromisoformat(as_of))
"""


@pytest.fixture
def t0(store: Store) -> datetime:
    """The database clock now: ``queue stats`` reads that clock, the drains pin times near it."""
    with store.engine.connect() as conn:
        return conn.execute(text("SELECT now()")).scalar_one()


@pytest.fixture
def hanging_drainer(store: Store, t0: datetime, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A drainer process holding a claimed batch of FACTS; killed at teardown at the latest."""
    with Session(store.engine) as session, session.begin():
        for fact in FACTS:
            queue.enqueue(session, "alice", "ADD_MEMORY", {"content": fact}, now=t0)
    url = store.engine.url.render_as_string(hide_password=False)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_DRAINER, url, str(tmp_path), t0.isoformat()],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline() == "embedding 20\n"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def claimer_pids(store: Store) -> set[int]:
    sql = text("SELECT DISTINCT claimer_pid FROM memory_write_queue WHERE status = 'processing'")
    with store.engine.connect() as conn:
        return set(conn.execute(sql).scalars())


def wait_until_backends_end(store: Store, pids: set[int]) -> None:
    """PostgreSQL ends a backend when it reads its client's EOF: wait for that, not a time."""
    sql = text("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(:pids)")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with store.engine.connect() as conn:
            if conn.execute(sql, {"pids": list(pids)}).scalar_one() == 0:
                return
        time.sleep(0.01)
    raise AssertionError(f"backends {pids} still running")


def stats_line(settings: Settings) -> str:
    lines: list[str] = []
    show_stats(settings, lines.append)
    return lines[0]


def stuck_check(store: Store, settings: Settings, as_of: datetime) -> tuple[bool, str]:
    results, _ = store_checks(store.engine, settings, settings.watchdog, as_of)
    (stuck,) = [r for r in results if r.key == "queue:stuck"]
    return stuck.ok, stuck.summary


def test_a_killed_drainers_claims_are_reported_and_reclaimed_at_once_and_run_once(
    store: Store, settings: Settings, t0: datetime, hanging_drainer: subprocess.Popen[str]
) -> None:
    later = t0 + timedelta(minutes=1)  # far inside the 600 s stuck timeout
    embedder = HashingEmbedder(384)

    alive = drain_once(store.engine, embedder, settings, "rescuer", later)
    alive_line, alive_check = stats_line(settings), stuck_check(store, settings, later)
    pids = claimer_pids(store)
    os.kill(hanging_drainer.pid, signal.SIGKILL)
    hanging_drainer.wait(timeout=30)
    wait_until_backends_end(store, pids)
    gone_line, gone_check = stats_line(settings), stuck_check(store, settings, later)
    rescued = drain_once(store.engine, embedder, settings, "rescuer", later)
    again = drain_once(store.engine, embedder, settings, "rescuer", later + timedelta(hours=1))

    assert (alive.claimed, alive.reclaimed) == (0, 0)  # a live drainer's claims stay its own
    assert "processing 20 (stuck 0, worker gone 0)" in alive_line and alive_check[0]
    assert len(pids) == 1
    assert "processing 20 (stuck 0, worker gone 20)" in gone_line
    assert gone_check == (False, "0 items stuck in processing, 20 held by workers that are gone")
    assert (rescued.reclaimed, rescued.claimed, rescued.completed) == (20, 20, 20)
    assert again.claimed == 0 and again.reclaimed == 0
    with store.engine.connect() as conn:
        made = conn.execute(text("SELECT content, content_key FROM memories")).all()
        items = conn.execute(text("SELECT status, attempts, last_error FROM memory_write_queue"))
        states = items.all()
    assert sorted(content for content, _ in made) == sorted(FACTS)
    assert len({key for _, key in made}) == 20
    assert {(status, attempts) for status, attempts, _ in states} == {("completed", 2)}
    (pid,) = pids
    for _, _, error in states:
        assert error.startswith(f"worker gone: claimed by doomed (backend pid {pid}) at ")
        assert error.endswith("whose database connection closed before it finished; requeued")
