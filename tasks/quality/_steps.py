"""Thin Prefect tasks of ``memory-quality-report``: open, validate, publish, record."""

from __future__ import annotations

import uuid
from datetime import datetime

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from sqlalchemy.orm import Session

from storage import runs
from storage.kernel.errors import DataQualityError
from storage.quality_runs import QualityRunRecord, record_quality_run
from storage.server.engine import Store
from tasks.common import readable
from tasks.files import open_memory_root
from tasks.quality._run import run_quality
from tasks.quality._types import QualityReport

FLOW_NAME = "memory-quality-report"
ARTIFACT_KEY = "memory-quality-report"
SUMMARY_KEY = "memory-quality-summary"


@task(name="run-quality-suites", cache_policy=NO_CACHE)
def run_suites_task(store: Store, as_of: datetime) -> QualityReport:
    """Every suite; a failed expectation is a result here, not an exception."""
    report = run_quality(store, open_memory_root(store.settings), as_of)
    logger = get_run_logger()
    for check in report.failed:
        severity = "critical" if check.critical else "warning"
        logger.warning("[%s] %s", severity, check.line())
    logger.info(
        "%d expectations, %d failed (%d critical); Data Docs: %s",
        len(report.checks),
        len(report.failed),
        report.critical_failures,
        report.data_docs_uri,
    )
    return report


@task(name="publish-quality-report", cache_policy=NO_CACHE)
def publish_task(report: QualityReport) -> None:
    """A table artifact (one row per expectation) and a markdown summary."""
    create_table_artifact(
        key=ARTIFACT_KEY,
        table=report.table(),
        description=f"memory-quality-report as of {readable(report.as_of)}",
    )
    create_markdown_artifact(
        key=SUMMARY_KEY,
        markdown=report.markdown(),
        description=f"memory quality summary as of {readable(report.as_of)}",
    )


@task(name="record-quality-run", cache_policy=NO_CACHE)
def record_task(store: Store, run_id: uuid.UUID | None, report: QualityReport) -> int:
    """The ``quality_runs`` row and the ``runs`` outcome (of a recorded run), in one
    transaction."""
    record = QualityRunRecord(
        as_of=report.as_of,
        suite_results=report.suite_results(),
        success=report.success,
        critical_failures=report.critical_failures,
        data_docs_uri=report.data_docs_uri,
        flow_run_id=flow_run.get_id(),
    )
    summary = {"suites": record.suite_results, "critical_failures": report.critical_failures}
    with Session(store.engine) as session, session.begin():
        if run_id is not None:
            status = "completed" if report.success else "failed"
            runs.finish_run(session, run_id, status, summary)
        return record_quality_run(session, record)


def raise_on_critical(report: QualityReport) -> None:
    """Fail the run (after it is recorded) when a critical expectation failed."""
    if not report.success:
        raise DataQualityError(report.failure_message())
