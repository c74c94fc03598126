"""The result-only card of a sub-agent run: goal, limits, what was done, what is left."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from tasks.extraction._analysis import MAX_ITEMS, Msg, sentences
from tasks.extraction._text import clip, references
from tasks.extraction._types import OpenThread, TaskCard

_CARD_ITEMS = 8
_BOUNDARY = re.compile(r"\b(?:don't|do not|only|must not|without|scope)\b")
_ACCEPTANCE = re.compile(r"\b(?:done when|acceptance|must(?! not)|should|tests? pass)")
_NEXT = re.compile(r"\b(?:next|follow[ -]?up|todo)\b")
_DONE = re.compile(r"(?<!not )\b(?:done|completed|finished|merged)\b|\ball tests pass")
_BLOCKED = re.compile(r"\b(?:blocked|cannot|can't|waiting for)\b")
_FAILED = re.compile(r"\b(?:failed|error)\b")


def _matching(msgs: Iterable[Msg], pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Distinct sentences of msgs matching pattern, at most `_CARD_ITEMS`."""
    found: dict[str, None] = {}
    for msg in msgs:
        for sentence, lower in sentences(msg):
            if len(found) < _CARD_ITEMS and pattern.search(lower):
                found.setdefault(clip(sentence, 300), None)
    return tuple(found)


def _goal(briefs: Sequence[Msg]) -> str:
    """The first brief's opening sentences, up to 300 characters."""
    opening = sentences(briefs[0]) if briefs else []
    goal = ""
    for sentence, _ in opening:
        candidate = f"{goal} {sentence}".strip()
        if goal and len(candidate) > 300:
            break
        goal = candidate
    return clip(goal, 300) or "No goal stated."


def _artifacts(msgs: Sequence[Msg]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for msg in msgs:
        for kind, ref in references(msg.text):
            if kind in ("url", "path", "issue"):
                found.setdefault(ref, None)
    return tuple(found)[:MAX_ITEMS]


def _status(msgs: Sequence[Msg]) -> Literal["done", "blocked", "in_progress", "failed"]:
    """Read from the last assistant message: the sub-agent's own final word."""
    last = next((m for m in reversed(msgs) if m.record.role == "assistant"), None)
    lower = last.lower if last else ""
    if _DONE.search(lower):
        return "done"
    if _BLOCKED.search(lower):
        return "blocked"
    return "failed" if _FAILED.search(lower) else "in_progress"


def task_card(msgs: Sequence[Msg], threads: Sequence[OpenThread]) -> TaskCard:
    """Result-only card of a sub-agent run: goal, limits, what was done, what is left."""
    briefs = [m for m in msgs if m.record.role in ("user", "system") and m.text]
    workers = [m for m in msgs if m.record.role in ("assistant", "tool") and m.text]
    actions = tuple(dict.fromkeys(clip(sentences(m)[0][0], 160) for m in workers))
    upcoming = [t.context for t in threads] + list(_matching(msgs, _NEXT))
    return TaskCard(
        goal=_goal(briefs),
        boundary=_matching(briefs, _BOUNDARY),
        acceptance=_matching(briefs, _ACCEPTANCE),
        actions=actions[:_CARD_ITEMS],
        artifacts=_artifacts(msgs),
        status=_status(msgs),
        next=tuple(dict.fromkeys(upcoming))[:_CARD_ITEMS],
    )
