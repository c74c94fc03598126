"""``memory-aging``: decay, compress, archive and (only when enabled) delete, nightly."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import flow_run, resolve_shard
from storage.kernel.records import NAMESPACE_PATTERN
from storage.kernel.shards import SHARD_PATTERN, Scope
from storage.operations.aging import DecayParams
from tasks.aging import (
    AgingReport,
    access_log_task,
    archive_task,
    compress_task,
    cutoffs,
    decay_task,
    delete_task,
    open_cold_store,
    timed,
)
from tasks.common import (
    fold_access_task,
    notify_flow_failure,
)

FLOW_NAME = "memory-aging"


@flow(
    name=FLOW_NAME,
    description="Memories fade, old sessions shrink to summaries, old rows move to cold storage, "
    "old accesses become daily counts.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_aging(
    as_of: datetime | None = None,
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None,
    *,
    dry_run: bool = False,
    shard: Annotated[str | None, Field(pattern=SHARD_PATTERN)] = None,
) -> AgingReport:
    """Age the memory: salience fades, sessions older than 90 days shrink to their
    summary, rows older than 365 days move to cold Parquet, deletion runs only
    when it is enabled, and the searches logged before the access log's window
    (90 days) become counts per day.

    Args:
        as_of: Age as if it were this moment (ISO 8601). A time without a zone is read
            in ARCHIVIST_TIMEZONE. Empty: now.
        namespace: Only this namespace (one user or project). Empty: every namespace.
        dry_run: Report what would change and write nothing.
        shard: Only the namespaces of shard i/n (for example 2/4) of a split by a
            stable hash of the namespace, so several workers share the work (see
            memory-sharded-run). Empty: every namespace.
    """
    scope = Scope(namespace, resolve_shard(shard), dry_run=dry_run)
    with flow_run(FLOW_NAME, as_of, scope) as run:
        cold, policy = open_cold_store(run.settings), run.settings.aging
        when = cutoffs(run.as_of, policy)
        report = AgingReport(run.as_of.isoformat(), run.pseudonym, dry_run, scope.shard_label)
        decay = DecayParams(run.as_of, policy.half_life_days, policy.salience_epsilon, scope)
        if not dry_run:  # salience and archived rows count every access searches recorded
            fold_access_task(run.store, namespace, scope.shard)
        with timed(report, "decay"):
            report.decay = decay_task(run.store, decay)
        with timed(report, "compression"):
            report.compression = compress_task(run.store, cold, run.embedder, when.compress, scope)
        with timed(report, "archival"):
            report.archival = archive_task(run.store, cold, when.archive, scope, as_of=run.as_of)
        with timed(report, "deletion"):
            report.deletion = delete_task(run.store, cold, when.delete, scope)
        with timed(report, "access_log"):
            report.access_log = access_log_task(run.store, when.access_log, scope)
        run.finish(report)
        run.publish(report)
    return report
