"""What the Prefect API says about Archivist's deployments, reduced to plain records.

A deployment's finished runs are its own and those of its flow that belong to no
deployment (``archivist sync``, the demo, a script): a run outside a deployment still
proves the job ran. Runs of another deployment of the same flow are that one's. Late runs
are scheduled ones, so only the deployment's own count.

Runs are read as of the watchdog's ``as_of``: finished runs that ended by then, scheduled
runs due by then. The deployments' own settings (paused, schedules) are read as they are
now; the API keeps no history of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterName,
    DeploymentFilterTags,
    FlowFilter,
    FlowFilterId,
    FlowRunFilter,
    FlowRunFilterDeploymentId,
    FlowRunFilterEndTime,
    FlowRunFilterExpectedStartTime,
    FlowRunFilterState,
    FlowRunFilterStateType,
    Operator,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.client.schemas.responses import DeploymentResponse
from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule
from prefect.client.schemas.sorting import FlowRunSort

from tasks.watchdog._checks import DeploymentInfo, RunInfo, ScheduleInfo

_FINISHED = [StateType.COMPLETED, StateType.FAILED, StateType.CRASHED]


def read_deployments(
    client: SyncPrefectClient, tag: str, names: Sequence[str] | None
) -> list[DeploymentResponse]:
    """Deployments carrying ``tag`` (and, when given, only those names)."""
    flt = DeploymentFilter(tags=DeploymentFilterTags(all_=[tag]))
    if names:
        flt = DeploymentFilter(
            tags=DeploymentFilterTags(all_=[tag]), name=DeploymentFilterName(any_=list(names))
        )
    return client.read_deployments(deployment_filter=flt)


def _schedule(*, active: bool, schedule: object) -> ScheduleInfo:
    if isinstance(schedule, CronSchedule):
        return ScheduleInfo(active, cron=schedule.cron, timezone=schedule.timezone or None)
    if isinstance(schedule, IntervalSchedule):
        seconds = schedule.interval.total_seconds()
        return ScheduleInfo(active, interval_seconds=seconds, timezone=schedule.timezone)
    return ScheduleInfo(active)


def _run(run: FlowRun | None) -> RunInfo | None:
    if run is None or run.state is None:
        return None
    state = run.state
    return RunInfo(
        run.name,
        state.type.value,
        state.name or state.type.value,
        run.end_time,
        by_deployment=run.deployment_id is not None,
    )


def _newest_finished(
    client: SyncPrefectClient,
    deployment: DeploymentResponse,
    as_of: datetime,
    types: list[StateType],
) -> FlowRun | None:
    # "Of this deployment, or of none"; the operator comes from a mixin mypy cannot see.
    own_or_none = FlowRunFilterDeploymentId.model_validate(
        {"operator": Operator.or_, "any_": [deployment.id], "is_null_": True}
    )
    runs = client.read_flow_runs(
        flow_filter=FlowFilter(id=FlowFilterId(any_=[deployment.flow_id])),
        flow_run_filter=FlowRunFilter(
            deployment_id=own_or_none,
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=types)),
            end_time=FlowRunFilterEndTime(before_=as_of),
        ),
        sort=FlowRunSort.END_TIME_DESC,
        limit=1,
    )
    return runs[0] if runs else None


def _late_runs(client: SyncPrefectClient, deployment: DeploymentResponse, as_of: datetime) -> int:
    return client.count_flow_runs(
        flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[deployment.id]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
            expected_start_time=FlowRunFilterExpectedStartTime(before_=as_of),
        )
    )


def observe(
    client: SyncPrefectClient, deployment: DeploymentResponse, as_of: datetime
) -> DeploymentInfo:
    """One deployment's settings and runs as the checks need them."""
    finished = _newest_finished(client, deployment, as_of, _FINISHED)
    completed = _newest_finished(client, deployment, as_of, [StateType.COMPLETED])
    return DeploymentInfo(
        name=deployment.name,
        paused=deployment.paused,
        created=deployment.created,
        schedules=[_schedule(active=s.active, schedule=s.schedule) for s in deployment.schedules],
        last_finished=_run(finished),
        last_completed_at=None if completed is None else completed.end_time,
        late_runs=_late_runs(client, deployment, as_of),
    )
