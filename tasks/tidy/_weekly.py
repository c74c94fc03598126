"""The weekly summary ``memory/weekly/<Monday>.md``: the week's episodes, traceable to ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import Any

from sqlalchemy.orm import Session

from storage import weekly
from tasks.files import md_inline
from tasks.tidy._merge import normalise
from tasks.tidy._render import cut_utf8, trace

TOP_TOPICS = 10
MAX_ITEMS = 20
SUMMARY_BYTES = 300


@dataclass(frozen=True)
class WeekEpisode:
    """What the summary needs of one episode."""

    memory_id: int | None
    session_kind: str
    summary: str
    topics: tuple[str, ...]
    open_threads: tuple[str, ...]
    message_count: int
    ended_at: datetime


@dataclass(frozen=True)
class Week:
    """The week's material for one namespace."""

    namespace: str
    monday: date
    window: tuple[datetime, datetime]
    episodes: tuple[WeekEpisode, ...]
    decisions: tuple[tuple[int, str], ...]
    kind_counts: dict[str, int]


def weekly_path(namespace: str, monday: date) -> str:
    return f"{namespace}/memory/weekly/{monday:%Y-%m-%d}.md"


def load_week(
    session: Session, namespace: str, monday: date, window: tuple[datetime, datetime]
) -> Week:
    """Read the week's episodes, decisions and memory counts."""
    episodes = tuple(_episode(r) for r in weekly.week_episodes(session, namespace, window))
    decisions = tuple(weekly.week_decisions(session, namespace, window))
    counts = weekly.week_kind_counts(session, namespace, window)
    return Week(namespace, monday, window, episodes, decisions, counts)


def _episode(row: Any) -> WeekEpisode:
    threads = tuple(str(t.get("context", "")) for t in row.open_threads or [])
    return WeekEpisode(
        memory_id=row.memory_id,
        session_kind=row.session_kind,
        summary=row.summary,
        topics=tuple(row.topics or ()),
        open_threads=tuple(t for t in threads if t),
        message_count=row.message_count,
        ended_at=row.ended_at,
    )


def render_week(week: Week, tz: tzinfo) -> str:
    """The summary: counts, top topics, decisions, open threads, conversations."""
    episodes = week.episodes
    start, end = (moment.astimezone(tz) for moment in week.window)
    kinds = Counter(e.session_kind for e in episodes)
    lines = [
        f"# Week of {week.monday:%Y-%m-%d} · {week.namespace}",
        f"<!-- archivist:weekly {week.monday:%Y-%m-%d} episodes={len(episodes)} -->",
        "",
        f"- Window: {start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M} ({tz})",
        f"- Conversations: {len(episodes)} ({_counts(kinds)}) · messages "
        f"{sum(e.message_count for e in episodes)}",
        f"- Memories: {_counts(Counter(week.kind_counts))}",
        f"- Top topics: {_top_topics(episodes)}",
    ]
    lines += _section("Decisions", _merged(week.decisions))
    threads = [(t, _ids(e)) for e in episodes for t in e.open_threads]
    lines += _section("Open threads", threads)
    conversations = [
        (f"{e.ended_at.astimezone(tz):%Y-%m-%d} · {e.summary}", _ids(e)) for e in episodes
    ]
    lines += _section("Conversations", conversations)
    return "\n".join(lines) + "\n"


def _merged(items: Sequence[tuple[int, str]]) -> list[tuple[str, list[int]]]:
    """Equal texts (once normalised) as one item citing every id, in first-seen order."""
    groups: dict[str, tuple[str, list[int]]] = {}
    for mid, text in items:
        groups.setdefault(normalise(text), (text, []))[1].append(mid)
    return [(text, sorted(ids)) for text, ids in groups.values()]


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counter.items())) or "none"


def _top_topics(episodes: Sequence[WeekEpisode]) -> str:
    topics = Counter(t.casefold() for e in episodes for t in dict.fromkeys(e.topics))
    ranked = sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TOPICS]
    return ", ".join(f"{t} ({n})" for t, n in ranked) or "none"


def _ids(episode: WeekEpisode) -> list[int]:
    return [] if episode.memory_id is None else [episode.memory_id]


def _section(title: str, items: Sequence[tuple[str, list[int]]]) -> list[str]:
    if not items:
        return []
    out = ["", f"## {title}"]
    for text, ids in items[:MAX_ITEMS]:
        tail = f" {trace(ids, 80)}" if ids else ""
        out.append(f"- {cut_utf8(md_inline(text), SUMMARY_BYTES)}{tail}")
    if len(items) > MAX_ITEMS:
        out.append(f"- … and {len(items) - MAX_ITEMS} more")
    return out
