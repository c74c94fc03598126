"""``memory-quality-report``: Great Expectations suites over the store, reports, a verdict."""

from __future__ import annotations

from datetime import datetime

from prefect import flow

from flows.common import flow_run
from tasks.common import notify_flow_failure
from tasks.quality import (
    FLOW_NAME,
    QualityReport,
    publish_task,
    raise_on_critical,
    record_task,
    run_suites_task,
)


@flow(
    name=FLOW_NAME,
    description="Data-quality checks of memories, episodes, the queue and the memory files.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_quality_report(
    as_of: datetime | None = None,
    *,
    fail_on_critical: bool = True,
) -> QualityReport:
    """Check the memory tables and files, publish the reports, record the run.

    Args:
        as_of: Check as if it were this moment (ISO 8601); rows created or occurring
            later count as from the future. A time without a zone is read in
            ARCHIVIST_TIMEZONE. Empty: now.
        fail_on_critical: Mark the run failed when a critical check fails.
    """
    parameters = {"fail_on_critical": fail_on_critical}
    with flow_run(FLOW_NAME, as_of, parameters=parameters, embedder=False) as run:
        report = run_suites_task(run.store, run.as_of)
        publish_task(report)
        record_task(run.store, run.run_id, report)  # its outcome, beside quality_runs'
    if fail_on_critical:
        raise_on_critical(report)
    return report
