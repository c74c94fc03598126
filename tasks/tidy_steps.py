"""Thin Prefect tasks of the weekly tidy: transactions, retries on I/O, the report."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from sqlalchemy.orm import Session

from storage import long_term, runs
from storage.engine import Store
from tasks.memory_files import open_memory_root
from tasks.retry import IO_RETRY
from tasks.tidy import NamespaceOutcome, TidyContext, tidy_namespace
from tasks.tidy_report import TidyReport


@task(name="start-tidy-run", cache_policy=NO_CACHE)
def start_tidy_run(
    store: Store, flow: str, as_of: datetime, parameters: dict[str, Any]
) -> uuid.UUID:
    with Session(store.engine) as session, session.begin():
        return runs.start_run(session, flow, as_of, parameters, flow_run.get_id())


@task(name="finish-tidy-run", cache_policy=NO_CACHE)
def finish_tidy_run(store: Store, run_id: uuid.UUID, report: TidyReport) -> None:
    with Session(store.engine) as session, session.begin():
        runs.finish_run(session, run_id, "completed", report.as_dict())


@task(name="tidy-namespaces", cache_policy=NO_CACHE, **IO_RETRY)
def namespaces_task(store: Store, only: str | None) -> list[str]:
    with Session(store.engine) as session:
        return long_term.namespaces(session, only)


@task(
    name="tidy-namespace",
    task_run_name="tidy-{namespace}",
    cache_policy=NO_CACHE,
    **IO_RETRY,
)
def tidy_namespace_task(store: Store, ctx: TidyContext, namespace: str) -> NamespaceOutcome:
    """One namespace; safe to retry, since every step finishes what an earlier try began."""
    outcome = tidy_namespace(store.engine, open_memory_root(store.settings), ctx, namespace)
    get_run_logger().info(
        "%s: MEMORY.md %s (%d lines, %d bytes); %d entered, %d left; %d logs archived",
        namespace,
        outcome.memory_md,
        outcome.lines,
        outcome.bytes,
        len(outcome.entered),
        len(outcome.left),
        len(outcome.logs_moved),
    )
    return outcome


@task(name="publish-tidy-report", cache_policy=NO_CACHE)
def publish_tidy_report(report: TidyReport) -> None:
    create_markdown_artifact(
        key=f"{report.flow}-report",
        markdown=report.markdown(),
        description=f"{report.flow} as of {report.as_of}",
    )
