"""A real SIGTERM to a real ``archivist serve`` against the session's Prefect server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prefect import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterName,
    FlowRunFilter,
    FlowRunFilterTags,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.client.schemas.responses import DeploymentResponse
from prefect.settings import PREFECT_API_URL

from deployments.schedule import DEPLOYMENTS
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import add_session, chat

ARCHIVIST = str(Path(sys.executable).parent / "archivist")
REPO = Path(__file__).resolve().parents[2]
NAMES = [spec.name for spec in DEPLOYMENTS]
# The runner looks for runs to start every second rather than Prefect's default ten: the
# tests start runs and wait for serve to pick them up.
RUNNER_POLL_SECONDS = "1"


async def ours() -> list[DeploymentResponse]:
    async with get_client() as client:
        return await client.read_deployments(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=NAMES))
        )


async def states() -> list[StateType | None]:
    async with get_client() as client:
        runs = await client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=NAMES))
        )
    return [run.state.type if run.state else None for run in runs]


async def start_a_run(name: str) -> None:
    (deployment,) = [d for d in await ours() if d.name == name]
    async with get_client() as client:
        await client.create_flow_run_from_deployment(deployment.id)


def wait_for(check, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def test_sigterm_pauses_every_deployment_and_leaves_no_run_pending(
    flow_env: Settings, tmp_path: Path
) -> None:
    env = os.environ | {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
        "PREFECT_RUNNER_POLL_FREQUENCY": RUNNER_POLL_SECONDS,
    }
    asyncio.run(delete_ours())  # prefect deploy's (with its pull steps) from another test
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        serve = subprocess.Popen(
            [ARCHIVIST, "serve"], env=env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        wait_for(lambda: len([d for d in asyncio.run(ours()) if not d.paused]) == len(NAMES))
        asyncio.run(start_a_run("memory-queue-drain"))
        asyncio.run(start_a_run("memory-cron-watchdog"))
        wait_for(lambda: StateType.SCHEDULED not in asyncio.run(states()), 60)
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(timeout=120)
    finally:
        if serve.poll() is None:
            serve.kill()
    output = log.read_text(errors="replace")
    try:
        assert code == 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
        assert [d.paused for d in asyncio.run(ours())] == [True] * len(NAMES)
        assert StateType.PENDING not in asyncio.run(states())
    finally:
        asyncio.run(delete_ours())


async def delete_ours() -> None:
    async with get_client() as client:
        for deployment in await ours():
            await client.delete_deployment(deployment.id)


# An extractor that says it started, then waits until the flow run that started it is gone.
STALLING_EXTRACTOR = """
import os, pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
parent = os.getppid()
while os.getppid() == parent:
    time.sleep(0.05)
"""


async def run_of(name: str, tag: str | None = None) -> list[FlowRun]:
    async with get_client() as client:
        return await client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[name])),
            flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[tag])) if tag else None,
        )


def test_sigterm_during_a_run_schedules_it_again_for_the_same_night(
    flow_env: Settings, tmp_path: Path
) -> None:
    """The 23:00 sync is running when serve gets SIGTERM (a restart): the run is cancelled,
    and a new one with its as_of is scheduled, so that night is still synced."""
    turns = chat(datetime.now(UTC) - timedelta(hours=2), "Book the dentist.", "Done.", "Ta!", "Ok.")
    add_session(open_store(flow_env), "s1", "alice", turns)
    marker = tmp_path / "extracting"
    env = os.environ | {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
        "PREFECT_RUNNER_POLL_FREQUENCY": RUNNER_POLL_SECONDS,
        "ARCHIVIST_EXTRACTOR__MODE": "command",
        "ARCHIVIST_EXTRACTOR__COMMAND": json.dumps(
            [sys.executable, "-c", STALLING_EXTRACTOR, str(marker)]
        ),
    }
    asyncio.run(delete_ours())
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        serve = subprocess.Popen(
            [ARCHIVIST, "serve"], env=env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        wait_for(lambda: len([d for d in asyncio.run(ours()) if not d.paused]) == len(NAMES))
        asyncio.run(start_a_run("memory-sync-daily"))
        wait_for(marker.exists, 120)  # the run is in the middle of its extractor
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(timeout=120)
    finally:
        if serve.poll() is None:
            serve.kill()
    output = log.read_text(errors="replace")
    try:
        (cut,) = [
            r for r in asyncio.run(run_of("memory-sync-daily")) if "rescheduled" not in r.tags
        ]
        (again,) = asyncio.run(run_of("memory-sync-daily", "rescheduled"))
        assert code == 0, output[-3000:]
        assert cut.state_type in {StateType.CANCELLED, StateType.CANCELLING, StateType.CRASHED}
        assert again.state_type == StateType.SCHEDULED
        assert cut.expected_start_time is not None
        assert datetime.fromisoformat(again.parameters["as_of"]) == cut.expected_start_time
        assert f"memory-sync-daily: run {cut.name} was in progress and the stop cancelled" in output
        assert f"run {again.name} (as_of {again.parameters['as_of']}) is scheduled" in output
    finally:
        asyncio.run(delete_ours())
