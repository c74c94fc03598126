"""``memory-aging``: decay, compress, archive and (only when enabled) delete, nightly."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import resolve_as_of, resolve_shard
from storage.kernel.records import NAMESPACE_PATTERN
from storage.kernel.settings import Settings
from storage.kernel.shards import SHARD_PATTERN
from storage.operations.aging import DecayParams
from tasks.aging import (
    AgingReport,
    archive_task,
    compress_task,
    cutoffs,
    decay_task,
    delete_task,
    open_cold_store,
    timed,
)
from tasks.common import (
    connect_task,
    finish_run,
    fold_access_task,
    notify_flow_failure,
    pseudonyms_task,
    publish_report,
    start_run,
)

FLOW_NAME = "memory-aging"


@flow(
    name=FLOW_NAME,
    description="Memories fade, old sessions shrink to summaries, old rows move to cold storage.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_aging(
    as_of: datetime | None = None,
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None,
    dry_run: bool = False,
    shard: Annotated[str | None, Field(pattern=SHARD_PATTERN)] = None,
) -> AgingReport:
    """Age the memory: salience fades, sessions older than 90 days shrink to their
    summary, rows older than 365 days move to cold Parquet, and deletion runs only
    when it is enabled.

    Args:
        as_of: Age as if it were this moment (ISO 8601). A time without a zone is read
            in ARCHIVIST_TIMEZONE. Empty: now.
        namespace: Only this namespace (one user or project). Empty: every namespace.
        dry_run: Report what would change and write nothing.
        shard: Only the namespaces of shard i/n (for example 2/4) of a split by a
            stable hash of the namespace, so several workers share the work (see
            memory-sharded-run). Empty: every namespace.
    """
    part = resolve_shard(shard)
    label = str(part) if part else None
    settings = Settings()
    moment = resolve_as_of(as_of, settings)
    store, embedder = connect_task(settings)
    cold, policy, when = open_cold_store(settings), settings.aging, cutoffs(moment, settings.aging)
    pseudonym = pseudonyms_task(store, [namespace]).namespace(namespace)
    params = {"namespace": pseudonym, "shard": label, "dry_run": dry_run}
    run_id = None if dry_run else start_run(store, FLOW_NAME, moment, params)
    report = AgingReport(moment.isoformat(), pseudonym, dry_run, label)
    decay_params = DecayParams(
        moment, policy.half_life_days, policy.salience_epsilon, namespace, dry_run, part
    )
    if not dry_run:  # salience and archived rows count every access searches recorded
        fold_access_task(store, namespace, part)
    with timed(report, "decay"):
        report.decay = decay_task(store, decay_params)
    with timed(report, "compression"):
        report.compression = compress_task(
            store, cold, embedder, when.compress, namespace, part, dry_run
        )
    with timed(report, "archival"):
        report.archival = archive_task(store, cold, when.archive, namespace, part, dry_run, moment)
    with timed(report, "deletion"):
        report.deletion = delete_task(store, cold, when.delete, namespace, part, dry_run)
    if run_id is not None:
        finish_run(store, run_id, report)
    publish_report(FLOW_NAME, report)
    return report
