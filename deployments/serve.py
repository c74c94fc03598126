"""``archivist serve``: every deployment of ``deployments.schedule`` from one process.

For one machine: no work pool and no worker, only a Prefect API (``prefect server start``
or the temporary one Prefect starts by itself). Schedules run in ``ARCHIVIST_TIMEZONE``.
On SIGTERM or Ctrl-C, Prefect's runner pauses the served deployments' schedules before
it exits (``pause_on_shutdown``), so the UI shows them paused while nothing serves them;
the next ``archivist serve`` resumes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from prefect import serve
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron, Interval, Schedule

from deployments.schedule import DEPLOYMENTS, DeploymentSpec, load_flow
from flows.common import TAG
from storage.config import Settings


def schedule_of(spec: DeploymentSpec, timezone: str) -> Schedule:
    """The spec's cron or interval, in ``timezone``."""
    if spec.cron is not None:
        return Cron(spec.cron, timezone=timezone)
    if spec.interval is not None:
        return Interval(spec.interval, timezone=timezone)
    raise ValueError(f"deployment {spec.name} has neither a cron nor an interval")


def build_deployment(spec: DeploymentSpec, settings: Settings) -> RunnerDeployment:
    """One runner deployment with the same name, schedule, description and tag as the YAML."""
    deployment = load_flow(spec).to_deployment(
        name=spec.name,
        description=spec.description,
        tags=[TAG],
        schedules=[schedule_of(spec, settings.timezone)],
    )
    # to_deployment is sync-compatible: called from sync code it returns the deployment.
    return cast(RunnerDeployment, deployment)


def build_deployments(
    settings: Settings, specs: Sequence[DeploymentSpec] = DEPLOYMENTS
) -> list[RunnerDeployment]:
    """Every deployment of the table (an unimportable flow fails with its entrypoint)."""
    return [build_deployment(spec, settings) for spec in specs]


def serve_all(settings: Settings, limit: int | None = None) -> None:
    """Serve every deployment until SIGTERM or Ctrl-C; at most ``limit`` runs at once."""
    serve(*build_deployments(settings), limit=limit)
