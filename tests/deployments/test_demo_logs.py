"""The demo keeps the terminal quiet, its flow runs' logs still reach the Prefect API, and
what it suggests next runs as printed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId
from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

from tests.conftest import Clones, database_url

ARCHIVIST = str(Path(sys.executable).parent / "archivist")


@dataclass(frozen=True)
class Demo:
    """One ``archivist demo --days 3``: the environment it ran in, what it printed, and the
    time span of its run."""

    env: dict[str, str]
    done: subprocess.CompletedProcess[str]
    started: float
    ended: float


@pytest.fixture(scope="module")
def demo(
    prefect_harness: None,
    pg_url: str,
    clones: Clones,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Demo]:
    """The demo as a user runs it right after the README's first command, once for both
    tests (each reads it; a demo is about 4 s of CPU): ``archivist`` not on PATH, Prefect's
    logging as it comes (no PREFECT_LOGGING_* variable), a store of its own, the session's
    Prefect server."""
    name, folder = clones.take(), tmp_path_factory.mktemp("demo")
    bin_dir = str(Path(ARCHIVIST).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING")}
    env |= {
        "PATH": path,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(folder / "prefect-home"),
        "ARCHIVIST_DATABASE_URL": database_url(pg_url, name),
        "ARCHIVIST_DATA_DIR": str(folder / "data"),
        "ARCHIVIST_MEMORY_ROOT": str(folder / "memory"),
        "ARCHIVIST_TIMEZONE": "UTC",
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
    }
    started = time.time()
    done = subprocess.run(
        [ARCHIVIST, "demo", "--days", "3"], env=env, capture_output=True, text=True, timeout=600
    )
    yield Demo(env, done, started, time.time())
    clones.give_back(name)


def test_the_demos_runs_log_to_the_api_not_the_terminal(demo: Demo) -> None:
    assert demo.done.returncode == 0, demo.done.stderr[-3000:]
    assert "| INFO " not in demo.done.stdout + demo.done.stderr
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["memory-sync-daily"]))
        )
        ours = [
            r
            for r in runs
            if r.created and demo.started - 1 <= r.created.timestamp() <= demo.ended + 1
        ]
        assert ours
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[r.id for r in ours]))
        )
    assert any(log.level == 20 for log in logs), [log.message for log in logs][:5]


def test_the_demos_next_commands_run_as_printed(demo: Demo) -> None:
    """Right after the README's first command `archivist` is not on PATH: the demo prints the
    path it was run by, and each command it suggests runs as printed."""
    assert demo.done.returncode == 0, demo.done.stderr[-3000:]
    suggested = [line.strip() for line in demo.done.stdout.split("try next:")[1].splitlines()]
    assert [shlex.split(line)[:2] for line in suggested if line] == [
        [ARCHIVIST, "search"],
        [ARCHIVIST, "prime"],
        [ARCHIVIST, "status"],
    ]
    for line in filter(None, suggested):
        ran = subprocess.run(
            shlex.split(line), env=demo.env, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, (line, ran.stderr[-2000:])
    assert f"Prefect UI: {str(PREFECT_UI_URL.value()).rstrip('/')}/runs" in demo.done.stdout
    assert not re.search(
        r"\b1 (sessions|memories|blocks|files|messages|problems)\b", demo.done.stdout
    )
