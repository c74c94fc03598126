"""The file ``memory/weekly/<Monday>.md``: written with the record of what it quotes, and
rebuilt without a purged session.

Before the tidy writes a summary it records it in ``weekly_summaries`` (window, time zone,
the sessions it quotes), so a file never quotes a session no row names. A purge rebuilds
each recorded summary that quotes the session from the store as it is then (its rows
already gone, in the purge's transaction), or removes the file if no episode is left.
"""

from __future__ import annotations

from datetime import date, datetime, tzinfo
from typing import Protocol
from zoneinfo import ZoneInfo

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import weekly
from storage.weekly import WeeklySummary
from tasks.files import MemoryRoot, atomic_write, read_text
from tasks.tidy._weekly import load_week, render_week, weekly_path


class Week(Protocol):
    """What the summary needs of the tidy's context (``TidyContext``)."""

    @property
    def as_of(self) -> datetime: ...
    @property
    def tz(self) -> tzinfo: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def monday(self) -> date: ...
    @property
    def window(self) -> tuple[datetime, datetime]: ...


def write_weekly(engine: Engine, root: MemoryRoot, ctx: Week, namespace: str) -> str | None:
    """Rewrite the week's summary if it has episodes and differs; returns its path."""
    with Session(engine) as session, session.begin():
        week = load_week(session, namespace, ctx.monday, ctx.window)
        if not week.episodes:
            return None
        if not ctx.dry_run:
            weekly.record_summary(session, _trace(session, namespace, ctx, ctx.tz))
    relative = weekly_path(namespace, ctx.monday)
    text = render_week(week, ctx.tz)
    if not ctx.dry_run and read_text(root.fs, root.path(relative)) != text:
        atomic_write(root.fs, root.path(relative), text.encode("utf-8"))
    return relative


def _trace(session: Session, namespace: str, ctx: Week, tz: tzinfo) -> WeeklySummary:
    return WeeklySummary(
        namespace=namespace,
        monday=ctx.monday,
        window_start=ctx.window[0],
        window_end=ctx.window[1],
        timezone=str(tz),
        session_ids=weekly.week_sessions(session, namespace, ctx.window),
        updated_at=ctx.as_of,
    )


def rebuild_weekly(session: Session, root: MemoryRoot, summary: WeeklySummary) -> None:
    """Rewrite a recorded summary from the store as the caller's transaction sees it, and
    its record; with no episode left, remove the file and the record."""
    namespace, monday = summary.namespace, summary.monday
    window = (summary.window_start, summary.window_end)
    path = root.path(weekly_path(namespace, monday))
    week = load_week(session, namespace, monday, window)
    if not week.episodes:
        if root.fs.exists(path):
            root.fs.rm(path)
        weekly.drop_summary(session, namespace, monday)
        return
    atomic_write(root.fs, path, render_week(week, ZoneInfo(summary.timezone)).encode("utf-8"))
    summary.session_ids = weekly.week_sessions(session, namespace, window)
    session.flush()


def rebuild_weeklies(session: Session, root: MemoryRoot, namespace: str, session_id: str) -> int:
    """Rebuild every recorded summary of the namespace that quotes the session."""
    quoting = weekly.summaries_quoting(session, namespace, session_id)
    for summary in quoting:
        rebuild_weekly(session, root, summary)
    return len(quoting)
