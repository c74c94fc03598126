"""``memory-forget``: erase a namespace everywhere (optionally exporting it first)."""

from __future__ import annotations

from typing import Annotated

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from pydantic import Field

from storage.config import Settings
from storage.engine import Store
from storage.records import NAMESPACE_PATTERN
from tasks.aging import open_cold_store
from tasks.common import connect_task, notify_flow_failure
from tasks.files import open_memory_root
from tasks.privacy import ForgetOutcome, forget


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

    Args:
        namespace: The namespace (one user or project) to erase.
        confirm: Must be true: erasure cannot be undone.
        export_to: Export the namespace to this directory or fsspec URL before erasing.
            Empty: no export.
        actor: Who asked for the erasure, as written in the audit log.
        full_vacuum: Also rewrite the touched tables (VACUUM FULL) so nothing erased
            stays on disk; locks them while it runs.
    """
    if not confirm:
        raise ValueError(f"refusing to forget {namespace!r} without confirm=True")
    store, _ = connect_task(Settings())
    return forget_task(store, namespace, actor, export_to, full_vacuum)
