"""The demo keeps the terminal quiet, its flow runs' logs still reach the Prefect API, and
what it suggests next runs as printed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from prefect import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId
from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

from storage.kernel.settings import Settings

ARCHIVIST = str(Path(sys.executable).parent / "archivist")


def test_the_demos_runs_log_to_the_api_not_the_terminal(flow_env: Settings, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING")}
    env |= {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
    }
    started = time.time()

    demo = subprocess.run(
        [ARCHIVIST, "demo", "--days", "1"], env=env, capture_output=True, text=True, timeout=600
    )

    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "| INFO " not in demo.stdout + demo.stderr
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["memory-sync-daily"]))
        )
        ours = [r for r in runs if r.created and r.created.timestamp() >= started - 1]
        assert ours
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[r.id for r in ours]))
        )
    assert any(log.level == 20 for log in logs), [log.message for log in logs][:5]


def test_the_demos_next_commands_run_as_printed(flow_env: Settings, tmp_path: Path) -> None:
    """Right after the README's first command `archivist` is not on PATH: the demo prints the
    path it was run by, and each command it suggests runs as printed."""
    bin_dir = str(Path(ARCHIVIST).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_dir)
    env = os.environ | {
        "PATH": path,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
    }

    demo = subprocess.run(
        [ARCHIVIST, "demo", "--days", "3"], env=env, capture_output=True, text=True, timeout=600
    )

    assert demo.returncode == 0, demo.stderr[-3000:]
    suggested = [line.strip() for line in demo.stdout.split("try next:")[1].splitlines()]
    assert [shlex.split(line)[:2] for line in suggested if line] == [
        [ARCHIVIST, "search"],
        [ARCHIVIST, "prime"],
        [ARCHIVIST, "status"],
    ]
    for line in filter(None, suggested):
        ran = subprocess.run(
            shlex.split(line), env=env, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, (line, ran.stderr[-2000:])
    assert f"Prefect UI: {str(PREFECT_UI_URL.value()).rstrip('/')}/runs" in demo.stdout
    assert not re.search(r"\b1 (sessions|memories|blocks|files|messages|problems)\b", demo.stdout)
