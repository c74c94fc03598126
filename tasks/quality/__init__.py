"""``memory-quality-report``'s work: Great Expectations suites over the store, a verdict."""

from tasks.quality._html import write_html_report
from tasks.quality._run import check_memory_files, run_quality
from tasks.quality._steps import (
    FLOW_NAME,
    publish_task,
    raise_on_critical,
    record_task,
    run_suites_task,
)
from tasks.quality._types import CheckOutcome, QualityReport

__all__ = [
    "CheckOutcome",
    "FLOW_NAME",
    "QualityReport",
    "check_memory_files",
    "publish_task",
    "raise_on_critical",
    "record_task",
    "run_quality",
    "run_suites_task",
    "write_html_report",
]
