"""Markdown for the memory files: one block per session state, traceable to memory ids."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from storage.kernel.records import SessionState
from tasks.extraction import EpisodeDraft, TaskCard
from tasks.files import block_marker, md_inline, md_line


def block_key(state: SessionState, target: str) -> str:
    """Identifies one session state in one file kind (``daily``, ``task``, or ``session``
    for its timeline line)."""
    return f"{target}:{state.session.id}@{state.fingerprint[:16]}"


def _trace(state: SessionState, memory_ids: Sequence[int]) -> str:
    ids = ",".join(str(i) for i in memory_ids)
    return f"<!-- session={state.session.id} state={state.fingerprint[:16]} memories={ids} -->"


def _span(state: SessionState, tz: tzinfo) -> str:
    first = state.messages[0].timestamp.astimezone(tz)
    last = state.messages[-1].timestamp.astimezone(tz)
    start = f"{first:%Y-%m-%d %H:%M}"
    end = f"{last:%H:%M}" if first.date() == last.date() else f"{last:%Y-%m-%d %H:%M}"
    return f"{start}–{end}"


def _join(items: Sequence[str], empty: str = "none") -> str:
    return "; ".join(md_inline(item) for item in items) if items else empty


def display_title(state: SessionState, episode: EpisodeDraft) -> str:
    """The session's title; else its first topic; else its id."""
    session = state.session
    return session.title or (episode.topics[0] if episode.topics else session.id)


def render_daily_block(
    state: SessionState, episode: EpisodeDraft, memory_ids: Sequence[int], tz: tzinfo
) -> str:
    """The daily-log block of one session state; what the session and its messages said is
    escaped (``md_inline``, ``md_line``), so it cannot add a heading, a line or a marker."""
    session = state.session
    title = md_inline(display_title(state, episode))
    mood = md_inline(", ".join(f"{k}={v}" for k, v in sorted(episode.user_state.items())))
    lines = [
        f"## {_span(state, tz)} · {title} ({session.kind}, {md_inline(session.agent)})",
        block_marker(block_key(state, "daily")),
        _trace(state, memory_ids),
        "",
        md_line(episode.summary),
        "",
        f"- Topics: {_join(episode.topics)}",
        f"- Entities: {_join(episode.entities)}",
        f"- Outcomes: {_join([f'{o.type}: {o.content}' for o in episode.outcomes])}",
        f"- Open threads: {_join([t.context for t in episode.open_threads])}",
        f"- User state: {mood or 'unknown'}",
        f"- Importance {episode.importance:.2f} · vehemence {episode.vehemence:.2f}",
    ]
    return "\n".join(lines)


def render_task_card(
    state: SessionState, card: TaskCard, memory_ids: Sequence[int], tz: tzinfo
) -> str:
    """The result-only card of a sub-agent session state (seed 004)."""
    goal = md_inline(card.goal)
    short = goal if len(goal) <= 80 else goal[:77] + "..."
    lines = [
        f"## Task · {short} · {_span(state, tz)}",
        block_marker(block_key(state, "task")),
        _trace(state, memory_ids),
        "",
        f"- Goal: {goal}",
        f"- Boundary: {_join(card.boundary)}",
        f"- Acceptance: {_join(card.acceptance)}",
        f"- Actions: {_join(card.actions)}",
        f"- Artifacts: {_join(card.artifacts)}",
        f"- Status: {md_inline(card.status)}",
        f"- Next: {_join(card.next)}",
    ]
    return "\n".join(lines)


def task_card_text(card: TaskCard) -> str:
    """A task card as one retrievable memory text."""

    def plain(items: Sequence[str]) -> str:
        return "; ".join(items) if items else "none"

    return (
        f"Task: {card.goal} Status: {card.status}. Actions: {plain(card.actions)}. "
        f"Artifacts: {plain(card.artifacts)}. Next: {plain(card.next)}."
    )
