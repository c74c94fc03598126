"""``memory-quality-report``'s work: Great Expectations suites over the store, a verdict."""

from tasks.quality._steps import (
    FLOW_NAME,
    publish_task,
    raise_on_critical,
    record_task,
    run_suites_task,
)
from tasks.quality._types import QualityReport

__all__ = [
    "FLOW_NAME",
    "QualityReport",
    "publish_task",
    "raise_on_critical",
    "record_task",
    "run_suites_task",
]
