"""``memory-weekly-tidy``'s work: ``MEMORY.md``, the weekly summary, the archive of daily logs;
and what a purge needs of those files."""

from tasks.tidy._archive import archived_path, merge_logs
from tasks.tidy._memory_md import memory_md_path, without_entries
from tasks.tidy._merge import normalise
from tasks.tidy._namespace import TidyContext, make_context, tidy_namespace
from tasks.tidy._render import Caps, Line, cut_utf8, header, measure, render, trace
from tasks.tidy._report import TidyReport, build_report
from tasks.tidy._select import Candidate, document, score, select
from tasks.tidy._steps import namespaces_task, tidy_namespace_task
from tasks.tidy._weekly_file import rebuild_weeklies

__all__ = [
    "Candidate",
    "Caps",
    "Line",
    "TidyContext",
    "TidyReport",
    "archived_path",
    "build_report",
    "cut_utf8",
    "document",
    "header",
    "make_context",
    "measure",
    "memory_md_path",
    "merge_logs",
    "namespaces_task",
    "normalise",
    "rebuild_weeklies",
    "render",
    "score",
    "select",
    "tidy_namespace",
    "tidy_namespace_task",
    "trace",
    "without_entries",
]
