"""``memory-quality-report``: Great Expectations suites over the store, reports, a verdict."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect import flow
from pydantic import Field

from flows.common import resolve_as_of
from storage.config import Settings
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
    description="Data-quality suites over memories, episodes, queue, files.",
    on_failure=[notify_flow_failure],
    on_crashed=[notify_flow_failure],
)
def memory_quality_report(
    as_of: Annotated[
        datetime | None,
        Field(description="Reference time: later created_at/occurred_at count as future"),
    ] = None,
    fail_on_critical: Annotated[
        bool, Field(description="Fail the run when a critical expectation fails")
    ] = True,
) -> QualityReport:
    """Validate, publish the artifacts, record the run; fail on a critical expectation."""
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
