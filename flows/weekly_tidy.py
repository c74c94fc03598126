"""``memory-weekly-tidy``: the week into MEMORY.md, a weekly summary and the archive."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import flow_run
from storage.kernel.records import NAMESPACE_PATTERN
from storage.kernel.shards import Scope
from tasks.common import (
    fold_access_task,
    notify_flow_failure,
    pseudonyms_task,
)
from tasks.tidy import (
    TidyReport,
    build_report,
    make_context,
    namespaces_task,
    tidy_namespace_task,
)

FLOW_NAME = "memory-weekly-tidy"


@flow(
    name=FLOW_NAME,
    description="The week's daily logs into MEMORY.md and a weekly summary; logs archived.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_weekly_tidy(
    as_of: datetime | None = None,
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None,
    *,
    dry_run: bool = False,
) -> TidyReport:
    """Fold the week's daily logs into MEMORY.md (kept under its size cap) and a weekly
    summary, then archive the logs. Re-running the same week changes nothing.

    Args:
        as_of: Run as if it were this moment (ISO 8601); the week is the one before it.
            A time without a zone is read in ARCHIVIST_TIMEZONE. Empty: now.
        namespace: Only this namespace (one user or project). Empty: every namespace.
        dry_run: Report what would change and write nothing.
    """
    with flow_run(FLOW_NAME, as_of, Scope(namespace, dry_run=dry_run)) as run:
        found = namespaces_task(run.store, namespace)
        names = pseudonyms_task(run.store, [namespace, *found])
        if not dry_run:  # what stays in MEMORY.md weighs every access searches recorded
            fold_access_task(run.store, namespace)
        ctx = make_context(run.settings, run.embedder, run.as_of, run.run_id, dry_run=dry_run)
        outcomes = [tidy_namespace_task(run.store, ctx, ns, names.namespaces[ns]) for ns in found]
        report = build_report(FLOW_NAME, ctx, namespace, outcomes, run.started, names)
        run.finish(report)
        run.publish(report)
    return report
