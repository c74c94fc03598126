"""Prefect's flow runs given a namespace as a parameter: the name becomes its pseudonym.

Prefect keeps every flow run's parameters. A run started with ``namespace`` (by hand, by
the CLI, by a deployment) would name the namespace there for good after a ``forget``.
Prefect 3.8's API updates a flow run's parameters (``PATCH /flow_runs/{id}``), so
``forget`` replaces the name with the namespace's pseudonym in each run the store recorded
(``runs.flow_run_id``), and the ``memory-forget`` flow does the same to its own run once
the erasure is done. A run no longer in Prefect is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID


def rename_in_flow_runs(flow_run_ids: Iterable[str], namespace: str, pseudonym: str) -> int:
    """Replace ``namespace`` by ``pseudonym`` in the runs' ``namespace`` parameter; returns
    how many runs changed (none when no id is given: Prefect is not asked)."""
    ids = sorted(set(flow_run_ids))
    if not ids:
        return 0
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    changed = 0
    with get_client(sync_client=True) as client:
        for run_id in ids:
            try:
                run = client.read_flow_run(UUID(run_id))
            except ObjectNotFound:
                continue
            if run.parameters.get("namespace") != namespace:
                continue
            client.update_flow_run(run.id, parameters=run.parameters | {"namespace": pseudonym})
            changed += 1
    return changed
