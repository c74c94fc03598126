"""``memory-forget``: erase a namespace everywhere (optionally exporting it first)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import flow_run
from storage.kernel.records import NAMESPACE_PATTERN
from tasks.common import notify_flow_failure
from tasks.privacy import ForgetOutcome, forget_task, rename_own_run_task


@flow(
    name="memory-forget",
    description="Erase everything of one namespace, optionally exporting it first; audited.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_forget(
    namespace: Annotated[str, Field(pattern=NAMESPACE_PATTERN)],
    *,
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
    with flow_run("memory-forget", None, record=False, embedder=False) as run:
        outcome = forget_task(run.store, namespace, actor, export_to, full_vacuum=full_vacuum)
        rename_own_run_task(namespace, outcome.pseudonym)
    return replace(outcome, namespace=outcome.pseudonym)
