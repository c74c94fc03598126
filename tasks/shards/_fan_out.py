"""Start one deployment run per shard, then wait for all of them to finish."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from prefect import get_client, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import FlowRun
from prefect.deployments import run_deployment
from prefect.runtime import flow_run
from sqlalchemy.orm import Session

from storage import runs
from storage.kernel.shards import Shard
from storage.server.engine import Store


@task(name="fan-out", cache_policy=NO_CACHE)
def fan_out_task(
    deployment: str, shards: Sequence[Shard], parameters: dict[str, Any]
) -> dict[Shard, uuid.UUID]:
    """One run of ``deployment`` per shard, scheduled now for the work pool's workers.

    Each run's idempotency key is this flow run's id and the shard, so a retry of this
    flow finds the runs it already started instead of starting them twice.
    """
    parent = flow_run.get_id() or uuid.uuid4().hex
    started: dict[Shard, uuid.UUID] = {}
    for shard in shards:
        # run_deployment is sync-compatible: called from sync code it returns the run.
        run = run_deployment(
            deployment,
            parameters={**parameters, "shard": str(shard)},
            flow_run_name=f"shard-{shard.index}-of-{shard.count}",
            idempotency_key=f"{parent}:{shard}",
            timeout=0,  # start it and go on: the workers run the shards side by side
        )
        started[shard] = cast(FlowRun, run).id
    get_run_logger().info("%d shard runs of %s scheduled", len(started), deployment)
    return started


@dataclass(frozen=True)
class ShardState:
    """Where one shard's run stands (plain values: tasks must not pass ``FlowRun``s on)."""

    flow_run_id: str
    name: str
    state: str


def _state_of(run: FlowRun) -> ShardState:
    state = run.state.name if run.state is not None else None
    return ShardState(str(run.id), run.name, state or "unknown")


@task(name="wait-for-shards", cache_policy=NO_CACHE)
def wait_task(
    store: Store,
    flow: str,
    started: dict[Shard, uuid.UUID],
    timeout_seconds: float,
    poll_seconds: float,
) -> dict[Shard, ShardState]:
    """Every shard run once it is final, or as it is when ``timeout_seconds`` run out.

    A shard whose process is known gone (its run, in the store, marked ``crashed`` the way
    the watchdog marks it) counts as Crashed at once: Prefect would show it Running until
    its own zombie detection, if any, caught up.
    """
    logger = get_run_logger()
    deadline = time.monotonic() + timeout_seconds
    final: dict[Shard, ShardState] = {}
    with get_client(sync_client=True) as client:
        while True:
            waiting = {s: r for s, r in started.items() if s not in final}
            gone = _processes_gone(store, flow, [str(r) for r in waiting.values()])
            for shard, run_id in waiting.items():
                run = client.read_flow_run(run_id)
                if run.state is not None and run.state.is_final():
                    final[shard] = _state_of(run)
                elif str(run_id) in gone:
                    final[shard] = ShardState(str(run.id), run.name, gone[str(run_id)])
                if shard in final:
                    logger.info("shard %s: %s", shard, final[shard].state)
            if len(final) == len(started) or time.monotonic() >= deadline:
                break
            time.sleep(poll_seconds)
        unfinished = {s: client.read_flow_run(r) for s, r in started.items() if s not in final}
    if unfinished:
        logger.warning("%d shards not finished in %.0f s", len(unfinished), timeout_seconds)
    return final | {shard: _state_of(run) for shard, run in unfinished.items()}


def _processes_gone(store: Store, flow: str, flow_run_ids: list[str]) -> dict[str, str]:
    """The flow runs among these whose process is known dead, each with the state it is
    given: dead while running, or after its run recorded its outcome but before Prefect
    heard of its end (a shard that will never report; the next run redoes what it lacks)."""
    with Session(store.engine) as session, session.begin():
        runs.mark_crashed(session, flow)
        recorded = runs.reports_by_flow_run(session, flow_run_ids)
        ended = runs.ended_and_gone(session, flow_run_ids)
    gone = {r: "Crashed (process gone)" for r, o in recorded.items() if o.status == "crashed"}
    return {r: "Crashed (process gone after its run ended)" for r in ended} | gone
