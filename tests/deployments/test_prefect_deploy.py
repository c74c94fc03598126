"""``prefect deploy --all`` of prefect.yaml against a real Prefect server, as a user runs it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.client.schemas.responses import DeploymentResponse
from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule
from prefect.settings import PREFECT_API_URL

from deployments.schedule import DEPLOYMENTS
from deployments.serve import build_deployments
from storage.kernel.settings import Settings

REPO = Path(__file__).parents[2]


async def create_pool() -> None:
    async with get_client() as client:
        await client.create_work_pool(
            WorkPoolCreate(name="archivist-process", type="process"), overwrite=True
        )


async def read_deployments() -> list[DeploymentResponse]:
    async with get_client() as client:
        return await client.read_deployments()


def prefect_deploy_all(workdir: Path, env: dict[str, str]) -> None:
    """The repo's prefect.yaml and flows, deployed from a scratch directory."""
    (workdir / "prefect.yaml").write_text((REPO / "prefect.yaml").read_text())
    (workdir / "flows").symlink_to(REPO / "flows")
    done = subprocess.run(
        [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.fixture(scope="module", params=[None, "Europe/Berlin"], ids=["unset", "Berlin"])
def deployed(
    request: pytest.FixtureRequest,
    prefect_harness: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str | None, list[DeploymentResponse]]:
    """Every deployment of prefect.yaml, deployed with only ARCHIVIST_TIMEZONE (or nothing)."""
    asyncio.run(create_pool())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_")}
    env |= {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    if request.param is not None:
        env["ARCHIVIST_TIMEZONE"] = request.param
    prefect_deploy_all(tmp_path_factory.mktemp("deploy"), env)
    ours = {s.name for s in DEPLOYMENTS}
    return request.param, [d for d in asyncio.run(read_deployments()) if d.name in ours]


def test_prefect_deploy_schedules_in_the_time_zone_and_utc_when_unset(
    deployed: tuple[str | None, list[DeploymentResponse]],
) -> None:
    time_zone, deployments = deployed
    assert sorted(d.name for d in deployments) == sorted(s.name for s in DEPLOYMENTS)
    unscheduled = {s.name for s in DEPLOYMENTS if s.cron is None and s.interval_seconds is None}
    for deployment in deployments:
        if deployment.name in unscheduled:
            assert not deployment.schedules
            continue
        [schedule] = [s.schedule for s in deployment.schedules]
        assert isinstance(schedule, CronSchedule | IntervalSchedule)
        assert schedule.timezone == (time_zone or "UTC"), deployment.name


def test_prefect_deploy_stores_described_parameters(
    deployed: tuple[str | None, list[DeploymentResponse]],
) -> None:
    for deployment in deployed[1]:
        assert deployment.parameter_openapi_schema is not None
        properties = deployment.parameter_openapi_schema["properties"]
        assert properties and all(p.get("description") for p in properties.values())


def test_serve_without_a_time_zone_schedules_in_utc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARCHIVIST_TIMEZONE", raising=False)
    monkeypatch.delenv("ARCHIVIST_POLICY_FILE", raising=False)
    for deployment in build_deployments(Settings(data_dir=tmp_path)):
        if deployment.name == "memory-sharded-run":
            continue
        [schedule] = [s.schedule for s in deployment.schedules or []]
        assert isinstance(schedule, CronSchedule | IntervalSchedule)
        assert schedule.timezone == "UTC", deployment.name
