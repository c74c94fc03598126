"""``archivist serve``: every deployment of ``deployments.schedule`` from one process.

For one machine: no work pool and no worker, only a Prefect API (``prefect server start``
or the temporary one Prefect starts by itself). Schedules run in ``ARCHIVIST_TIMEZONE``.
On SIGTERM or Ctrl-C the runner stops polling, then pauses every served deployment
(``pause_on_shutdown``), so the UI shows them paused while nothing serves them; the next
``archivist serve`` resumes them. Runs it had claimed but not started (Pending) go back
to Scheduled, to start at the next serve. Prefect's own SIGTERM handler exits from inside
the event loop (a traceback, and only some deployments paused), so the signals are
handled here, in the loop.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence
from typing import cast

from prefect import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterName,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.deployments.runner import RunnerDeployment
from prefect.runner import Runner
from prefect.schedules import Cron, Interval, Schedule
from prefect.states import Scheduled

from deployments.schedule import DEPLOYMENTS, DeploymentSpec, load_flow
from flows.common import TAG
from storage.config import Settings


def schedules_of(spec: DeploymentSpec, timezone: str) -> list[Schedule]:
    """The spec's cron or interval, in ``timezone``; none for a deployment run on demand."""
    if spec.cron is not None:
        return [Cron(spec.cron, timezone=timezone)]
    if spec.interval is not None:
        return [Interval(spec.interval, timezone=timezone)]
    return []


def build_deployment(spec: DeploymentSpec, settings: Settings) -> RunnerDeployment:
    """One runner deployment with the same name, schedule, description and tag as the YAML."""
    deployment = load_flow(spec).to_deployment(
        name=spec.name,
        description=spec.description,
        tags=[TAG],
        schedules=schedules_of(spec, settings.timezone),
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
    runner = Runner(pause_on_shutdown=True, limit=limit)
    for deployment in build_deployments(settings):
        runner.add_deployment(deployment)
    print(f"serving {len(DEPLOYMENTS)} deployments; SIGTERM or Ctrl-C stops", file=sys.stderr)
    asyncio.run(_serve_until_signal(runner))


async def _serve_until_signal(runner: Runner) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    serving = asyncio.create_task(runner.start())
    await asyncio.sleep(0)  # start() installs Prefect's SIGTERM handler first: replace it
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not serving.done():
        await runner.astop()
        await serving  # leaving the runner pauses every deployment
    stopped.cancel()
    await _reschedule_pending()


async def _reschedule_pending() -> None:
    """Runs of the served deployments left Pending go back to Scheduled."""
    names = [spec.name for spec in DEPLOYMENTS]
    async with get_client() as client:
        pending = await client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=names)),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PENDING]))
            ),
        )
        for run in pending:
            await client.set_flow_run_state(
                run.id, Scheduled(message="archivist serve stopped before it started"), force=True
            )
