"""``memory-weekly-tidy``'s work: ``MEMORY.md``, the weekly summary, the archive of daily logs;
and what a purge needs of those files."""

from tasks.tidy._archive import archived_path
from tasks.tidy._memory_md import memory_md_path, without_entries
from tasks.tidy._namespace import make_context
from tasks.tidy._report import TidyReport, build_report
from tasks.tidy._steps import namespaces_task, tidy_namespace_task
from tasks.tidy._weekly_file import rebuild_weeklies

__all__ = [
    "TidyReport",
    "archived_path",
    "build_report",
    "make_context",
    "memory_md_path",
    "namespaces_task",
    "rebuild_weeklies",
    "tidy_namespace_task",
    "without_entries",
]
