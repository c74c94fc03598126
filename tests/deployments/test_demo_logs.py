"""The demo keeps the terminal quiet, and its flow runs' logs still reach the Prefect API."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from prefect import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId
from prefect.settings import PREFECT_API_URL

from storage.config import Settings

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
