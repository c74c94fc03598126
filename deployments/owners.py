"""Who made the deployments of Archivist's names: ``prefect deploy`` or ``archivist serve``.

Both make the same eight deployments (``deployments.schedule``), and Prefect keys a
deployment by its flow's and its own name: whichever runs second would take the other's
over. ``archivist serve`` on deployments of ``prefect deploy`` left them without their
pull steps (every later run crashed, ``Downloading flow code from storage at None``) and
paused them at its exit, so a worker started later failed too. So neither takes over:

- ``prefect deploy`` made those with a work pool; ``archivist serve`` refuses to start
  while they exist, unless told ``--replace`` (it deletes them, then serves).
- ``archivist serve`` made those without one; ``prefect deploy``'s build step
  ``check_names`` (``prefect.yaml``) refuses while they exist, and
  ``archivist serve --remove`` deletes them once nothing serves them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from prefect.client.orchestration import PrefectClient, SyncPrefectClient, get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterName,
    FlowFilter,
    FlowFilterName,
)
from prefect.client.schemas.responses import DeploymentResponse

from deployments.schedule import DEPLOYMENTS
from storage.kernel.errors import ConfigurationError

NAMES = [spec.name for spec in DEPLOYMENTS]  # each flow's name is its deployment's
SERVED_WITHIN = timedelta(seconds=90)  # a runner polls its deployments every few seconds
FLOWS = FlowFilter(name=FlowFilterName(any_=NAMES))
NAMED = DeploymentFilter(name=DeploymentFilterName(any_=NAMES))


async def ours(client: PrefectClient) -> list[DeploymentResponse]:
    """The deployments with Archivist's flow and deployment names."""
    return list(await client.read_deployments(flow_filter=FLOWS, deployment_filter=NAMED))


def ours_sync(client: SyncPrefectClient) -> list[DeploymentResponse]:
    return list(client.read_deployments(flow_filter=FLOWS, deployment_filter=NAMED))


def by_deploy(found: Sequence[DeploymentResponse]) -> list[DeploymentResponse]:
    """Those ``prefect deploy`` made: a worker of their work pool runs them."""
    return [d for d in found if d.work_pool_name]


def by_serve(found: Sequence[DeploymentResponse]) -> list[DeploymentResponse]:
    """Those ``archivist serve`` made: no work pool, its own process runs them."""
    return [d for d in found if not d.work_pool_name]


def served_now(found: Sequence[DeploymentResponse]) -> list[DeploymentResponse]:
    """Those a running ``archivist serve`` polls (a stopped one paused them)."""
    now = datetime.now(UTC)
    return [
        d
        for d in found
        if not d.paused and d.last_polled is not None and now - d.last_polled < SERVED_WITHIN
    ]


def named(found: Sequence[DeploymentResponse]) -> str:
    names = sorted(d.name for d in found)
    return names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"


def refuse_deploy_over_serve(found: Sequence[DeploymentResponse]) -> None:
    """``prefect deploy``'s refusal to take over the deployments of ``archivist serve``."""
    served = by_serve(found)
    if served:
        raise ConfigurationError(
            f"`archivist serve` made deployments with these names ({named(served)}); "
            "deploying would take them over. Stop `archivist serve`, run `archivist serve "
            "--remove`, then `prefect deploy --all` again"
        )


def refuse_serve_over_deploy(found: Sequence[DeploymentResponse]) -> None:
    """``archivist serve``'s refusal to take over the deployments of ``prefect deploy``."""
    deployed = by_deploy(found)
    if deployed:
        pools = ", ".join(sorted({str(d.work_pool_name) for d in deployed}))
        raise ConfigurationError(
            f"`prefect deploy` made deployments with these names ({named(deployed)}, work "
            f"pool {pools}) and its workers run them; serving would take them over. Run "
            f"`prefect worker start --pool {pools.split(', ')[0]}` instead, or `archivist "
            "serve --replace` to delete them and serve from here"
        )


def refuse_remove_while_served(found: Sequence[DeploymentResponse]) -> None:
    served = served_now(by_serve(found))
    if served:
        raise ConfigurationError(
            f"`archivist serve` is serving {named(served)} now: stop it (Ctrl-C or SIGTERM) "
            "before `archivist serve --remove`"
        )


def check_names() -> dict[str, str]:
    """``prefect.yaml``'s build step: refuse to deploy over ``archivist serve``'s deployments,
    in one line (Prefect would print an exception raised here inside two tracebacks)."""
    with get_client(sync_client=True) as client:
        found = ours_sync(client)
    try:
        refuse_deploy_over_serve(found)
    except ConfigurationError as exc:
        print(f"Error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    return {}
