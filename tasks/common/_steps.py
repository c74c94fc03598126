"""Thin Prefect tasks every flow shares: open the store, pseudonyms, record the run, publish
its report.

A run's recorded parameters and report, its artifact, its log lines and its task-run
names name a namespace or a session by its pseudonym (``storage.pseudonyms``), never by
the name or id a user chose: they outlive a ``forget``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from sqlalchemy.orm import Session

from storage import runs
from storage.embedding import Embedder
from storage.kernel.settings import Settings
from storage.kernel.shards import Shard
from storage.operations.access import Folded, fold_accesses
from storage.pseudonyms import Pseudonyms, pseudonyms
from storage.server.connect import connect
from storage.server.engine import Store, open_store
from storage.server.migrate import require_current
from tasks.common._retry import IO_RETRY
from tasks.common._time import readable


@task(name="open-store", cache_policy=NO_CACHE, **IO_RETRY)
def connect_task(settings: Settings) -> tuple[Store, Embedder]:
    """The store, its schema checked, and the embedder that fits it."""
    return connect(settings)


@task(name="open-store-alone", cache_policy=NO_CACHE, **IO_RETRY)
def open_store_task(settings: Settings) -> Store:
    """The store, its schema checked, without an embedder (for a flow that embeds nothing)."""
    store = open_store(settings)
    require_current(store.engine, settings)
    return store


@task(name="fold-accesses", cache_policy=NO_CACHE, **IO_RETRY)
def fold_access_task(
    store: Store, namespace: str | None = None, shard: Shard | None = None
) -> Folded:
    """The accesses searches counted since the last fold, into their memories' counters."""
    with Session(store.engine) as session, session.begin():
        out = fold_accesses(session, namespace, shard)
    get_run_logger().info("folded %d accesses into %d memories", out.accesses, out.memories)
    return out


@task(name="pseudonyms", cache_policy=NO_CACHE, **IO_RETRY)
def pseudonyms_task(
    store: Store, namespaces: Sequence[str | None] = (), sessions: Sequence[str] = ()
) -> Pseudonyms:
    """What reports, logs and task-run names call these namespaces and sessions."""
    with Session(store.engine) as session, session.begin():
        return pseudonyms(session, namespaces, sessions)


@task(name="start-run", cache_policy=NO_CACHE)
def start_run(store: Store, flow: str, as_of: datetime, parameters: dict[str, Any]) -> uuid.UUID:
    with Session(store.engine) as session, session.begin():
        return runs.start_run(session, flow, as_of, parameters, flow_run.get_id())


class RunReport(Protocol):
    """What every flow's report offers: a time, a dict for the runs table, markdown."""

    @property
    def as_of(self) -> object: ...

    def as_dict(self) -> dict[str, Any]: ...

    def markdown(self) -> str: ...


@task(name="finish-run", cache_policy=NO_CACHE)
def finish_run(store: Store, run_id: Any, report: RunReport) -> None:
    """Record that the run completed, with its report."""
    with Session(store.engine) as session, session.begin():
        runs.finish_run(session, run_id, "completed", report.as_dict())


def _moment(as_of: object) -> str:
    return readable(as_of) if isinstance(as_of, datetime | str) else str(as_of)


@task(name="publish-report", cache_policy=NO_CACHE)
def publish_report(flow: str, report: RunReport) -> None:
    """The report as the Prefect artifact ``<flow>-report``."""
    create_markdown_artifact(
        key=f"{flow}-report",
        markdown=report.markdown(),
        description=f"{flow} as of {_moment(report.as_of)}",
    )
