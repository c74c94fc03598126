"""Thin Prefect tasks of the weekly tidy: transactions, retries on I/O, the report."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from sqlalchemy.orm import Session

from storage import long_term
from storage.server.engine import Store
from tasks.common import IO_RETRY
from tasks.files import open_memory_root
from tasks.tidy._namespace import NamespaceOutcome, TidyContext, tidy_namespace


@task(name="tidy-namespaces", cache_policy=NO_CACHE, **IO_RETRY)
def namespaces_task(store: Store, only: str | None) -> list[str]:
    with Session(store.engine) as session:
        return long_term.namespaces(session, only)


@task(
    name="tidy-namespace",
    task_run_name="tidy-{label}",
    cache_policy=NO_CACHE,
    **IO_RETRY,
)
def tidy_namespace_task(
    store: Store, ctx: TidyContext, namespace: str, label: str
) -> NamespaceOutcome:
    """One namespace (``label``: its pseudonym, what the run's name and log say); safe to
    retry, since every step finishes what an earlier try began."""
    outcome = tidy_namespace(store.engine, open_memory_root(store.settings), ctx, namespace)
    get_run_logger().info(
        "%s: MEMORY.md %s (%d lines, %d bytes); %d entered, %d left; %d logs archived",
        label,
        outcome.memory_md,
        outcome.lines,
        outcome.bytes,
        len(outcome.entered),
        len(outcome.left),
        len(outcome.logs_moved),
    )
    return outcome
