"""``memory-forget``: erase a namespace everywhere (optionally exporting it first)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from pydantic import Field

from storage.kernel.records import NAMESPACE_PATTERN
from storage.kernel.settings import Settings
from storage.server.engine import Store
from tasks.aging import open_cold_store
from tasks.common import IO_RETRY, connect_task, notify_flow_failure
from tasks.files import open_memory_root
from tasks.privacy import ForgetOutcome, forget, rename_in_flow_runs


@task(name="forget-namespace", cache_policy=NO_CACHE)
def forget_task(
    store: Store, namespace: str, actor: str, export_to: str | None, full_vacuum: bool
) -> ForgetOutcome:
    settings = store.settings
    return forget(
        store.engine,
        open_cold_store(settings),
        open_memory_root(settings),
        namespace,
        actor=actor,
        export_to=export_to,
        export_options=settings.storage_options,
        full_vacuum=full_vacuum,
    )


@task(name="pseudonym-in-own-run", cache_policy=NO_CACHE, **IO_RETRY)
def rename_own_run_task(namespace: str, pseudonym: str) -> int:
    """The forgotten name out of this flow run's parameters."""
    own = flow_run.get_id()
    return rename_in_flow_runs([own] if own else [], namespace, pseudonym)


@flow(
    name="memory-forget",
    description="Erase everything of one namespace, optionally exporting it first; audited.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_forget(
    namespace: Annotated[str, Field(pattern=NAMESPACE_PATTERN)],
    confirm: bool = False,
    export_to: str | None = None,
    actor: Annotated[str, Field(max_length=200)] = "memory-forget",
    full_vacuum: bool = False,
) -> ForgetOutcome:
    """Erase one namespace's data everywhere (database, memory files, cold storage),
    optionally exporting it first; the audit log records who and when, not what.

    Once it is done this run's own namespace parameter is replaced by the namespace's
    pseudonym, as in every earlier run given the namespace, and the outcome it returns
    names the namespace by its pseudonym too.

    Args:
        namespace: The namespace (one user or project) to erase.
        confirm: Must be true: erasure cannot be undone.
        export_to: Export the namespace to this directory or fsspec URL before erasing.
            Empty: no export.
        actor: Who asked for the erasure, as written in the audit log.
        full_vacuum: Also rewrite every table that can hold a namespace's rows (VACUUM
            FULL) so nothing erased stays on disk; locks each while it runs.
    """
    if not confirm:
        raise ValueError("refusing to forget without confirm=True: erasure cannot be undone")
    store, _ = connect_task(Settings())
    outcome = forget_task(store, namespace, actor, export_to, full_vacuum)
    rename_own_run_task(namespace, outcome.pseudonym)
    return replace(outcome, namespace=outcome.pseudonym)
