"""``memory-quality-report``: Great Expectations suites over the store, reports, a verdict."""

from __future__ import annotations

from datetime import datetime

from prefect import flow

from flows.common import resolve_as_of
from storage.kernel.settings import Settings
from tasks.common import notify_flow_failure
from tasks.quality import (
    FLOW_NAME,
    QualityReport,
    open_store_task,
    publish_task,
    raise_on_critical,
    record_task,
    run_suites_task,
    start_run_task,
)


@flow(
    name=FLOW_NAME,
    description="Data-quality checks of memories, episodes, the queue and the memory files.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_quality_report(
    as_of: datetime | None = None,
    fail_on_critical: bool = True,
) -> QualityReport:
    """Check the memory tables and files, publish the reports, record the run.

    Args:
        as_of: Check as if it were this moment (ISO 8601); rows created or occurring
            later count as from the future. A time without a zone is read in
            ARCHIVIST_TIMEZONE. Empty: now.
        fail_on_critical: Mark the run failed when a critical check fails.
    """
    settings = Settings()
    as_of = resolve_as_of(as_of, settings)
    store = open_store_task(settings)
    run_id = start_run_task(store, as_of, {"fail_on_critical": fail_on_critical})
    report = run_suites_task(store, as_of)
    publish_task(report)
    record_task(store, run_id, report)
    if fail_on_critical:
        raise_on_critical(report)
    return report
