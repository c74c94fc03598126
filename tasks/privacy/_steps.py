"""Thin Prefect tasks of ``memory-forget``: erase the namespace, then its name from the run."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from storage.server.engine import Store
from tasks.aging import open_cold_store
from tasks.common import IO_RETRY
from tasks.files import open_memory_root
from tasks.privacy._erase import Export, ForgetOutcome, forget
from tasks.privacy._flow_runs import rename_in_flow_runs


@task(name="forget-namespace", cache_policy=NO_CACHE)
def forget_task(
    store: Store, namespace: str, actor: str, export_to: str | None, *, full_vacuum: bool
) -> ForgetOutcome:
    """Erase the namespace (after exporting it to ``export_to``, if given)."""
    settings = store.settings
    export = None if export_to is None else Export(export_to, settings.storage_options)
    return forget(
        store.engine,
        open_cold_store(settings),
        open_memory_root(settings),
        namespace,
        actor=actor,
        export=export,
        full_vacuum=full_vacuum,
    )


@task(name="pseudonym-in-own-run", cache_policy=NO_CACHE, **IO_RETRY)
def rename_own_run_task(namespace: str, pseudonym: str) -> int:
    """The forgotten name out of this flow run's parameters."""
    own = flow_run.get_id()
    return rename_in_flow_runs([own] if own else [], namespace, pseudonym)
