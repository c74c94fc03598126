"""``memory-weekly-tidy``'s work: ``MEMORY.md``, the weekly summary, the archive of daily logs."""

from tasks.tidy._namespace import make_context
from tasks.tidy._report import TidyReport, build_report
from tasks.tidy._steps import namespaces_task, tidy_namespace_task

__all__ = [
    "TidyReport",
    "build_report",
    "make_context",
    "namespaces_task",
    "tidy_namespace_task",
]
