"""``archivist serve``: every deployment of ``deployments.schedule`` from one process.

For one machine: no work pool and no worker, only a Prefect API (the one configured, or
the local server of ``deployments.local_prefect``). Schedules run in
``ARCHIVIST_TIMEZONE``. It never takes over deployments of the same names that
``prefect deploy`` made (``deployments.owners``): it refuses, or with ``--replace``
deletes them first.

On SIGTERM or Ctrl-C the runner stops polling, then pauses every served deployment
(``pause_on_shutdown``), so the UI shows them paused while nothing serves them; the next
``archivist serve`` resumes them. Runs it had claimed but not started (Pending) go back
to Scheduled, to start at the next serve. A run in progress is cancelled by the stop; it
is not lost: a new run of its deployment is scheduled with the same parameters and its
``as_of`` pinned to the time it was due (so the night's sync syncs that night), to run
when ``archivist serve`` starts again, and serve says so on stderr. Prefect's own SIGTERM
handler exits from inside the event loop (a traceback, and only some deployments paused),
so the signals are handled here, in the loop.
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
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.deployments.runner import RunnerDeployment
from prefect.runner import Runner
from prefect.schedules import Cron, Interval, Schedule
from prefect.states import Scheduled

from deployments import owners
from deployments.schedule import DEPLOYMENTS, DeploymentSpec, load_flow
from flows.common import TAG
from storage.kernel.settings import Settings

# What a run that the stop cut short is left in (the runner cancels what it runs).
CUT_SHORT = frozenset({StateType.CANCELLED, StateType.CANCELLING, StateType.CRASHED})


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


def serve_all(settings: Settings, limit: int | None = None, *, replace: bool = False) -> None:
    """Serve every deployment until SIGTERM or Ctrl-C; at most ``limit`` runs at once.
    Deployments of ``prefect deploy`` with the same names: refused, or with ``replace``
    deleted first."""
    asyncio.run(_take_the_names(replace=replace))
    runner = Runner(pause_on_shutdown=True, limit=limit)
    for deployment in build_deployments(settings):
        runner.add_deployment(deployment)
    asyncio.run(_serve_until_signal(runner))


def remove_served() -> str:
    """Delete the deployments ``archivist serve`` made, unless one is being served now."""
    return asyncio.run(_remove_served())


async def _remove_served() -> str:
    async with get_client() as client:
        found = await owners.ours(client)
        owners.refuse_remove_while_served(found)
        served = owners.by_serve(found)
        for deployment in served:
            await client.delete_deployment(deployment.id)
    if not served:
        return "no deployments of `archivist serve` to remove"
    return f"removed {len(served)} deployments of `archivist serve` ({owners.named(served)})"


async def _take_the_names(*, replace: bool) -> None:
    async with get_client() as client:
        found = await owners.ours(client)
        if not replace:
            owners.refuse_serve_over_deploy(found)
            return
        deployed = owners.by_deploy(found)
        for deployment in deployed:
            await client.delete_deployment(deployment.id)
    if deployed:
        _say(f"deleted {len(deployed)} deployments of `prefect deploy` ({owners.named(deployed)})")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def _serve_until_signal(runner: Runner) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    serving = asyncio.create_task(runner.start())
    await asyncio.sleep(0)  # start() installs Prefect's SIGTERM handler first: replace it
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # Said once the signals are ours: a SIGTERM before this (the deployments exist as soon
    # as they are added) met Prefect's handler or the default one, and no pause.
    _say(f"serving {len(DEPLOYMENTS)} deployments; SIGTERM or Ctrl-C stops")
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
    in_flight = await _runs_in(StateType.RUNNING)
    if not serving.done():
        await runner.astop()
        await serving  # leaving the runner pauses every deployment
    stopped.cancel()
    await _reschedule_pending()
    for line in await _reschedule_cut_short(in_flight):
        _say(line)


async def _runs_in(state: StateType) -> list[FlowRun]:
    """The runs of the served deployments in ``state``."""
    async with get_client() as client:
        return await client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=owners.NAMES)),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[state]))
            ),
        )


async def _reschedule_pending() -> None:
    """Runs of the served deployments left Pending go back to Scheduled."""
    pending = await _runs_in(StateType.PENDING)
    async with get_client() as client:
        for run in pending:
            await client.set_flow_run_state(
                run.id, Scheduled(message="archivist serve stopped before it started"), force=True
            )


async def _reschedule_cut_short(runs: Sequence[FlowRun]) -> list[str]:
    """A new run for each run the stop cut short (same parameters, ``as_of`` pinned to when
    it was due); a line for each, saying so."""
    said: list[str] = []
    async with get_client() as client:
        for run in runs:
            now = await client.read_flow_run(run.id)
            if run.deployment_id is None or now.state_type not in CUT_SHORT:
                continue  # it finished (or failed) by itself before the stop
            deployment = await client.read_deployment(run.deployment_id)
            parameters = dict(run.parameters)
            due = run.expected_start_time or run.start_time
            takes = (deployment.parameter_openapi_schema or {}).get("properties", {})
            if "as_of" in takes and parameters.get("as_of") is None and due is not None:
                parameters["as_of"] = due.isoformat()
            again = await client.create_flow_run_from_deployment(
                deployment.id,
                parameters=parameters,
                state=Scheduled(message=f"archivist serve stopped during run {run.name}"),
                tags=[*run.tags, "rescheduled"],
            )
            said.append(
                f"{deployment.name}: run {run.name} was in progress and the stop cancelled it; "
                f"run {again.name} (as_of {parameters.get('as_of', 'now')}) is scheduled in its "
                "place and runs when `archivist serve` starts again"
            )
    return said
