"""Reads for the weekly summary: a namespace's episodes and memories of one window."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

_EPISODES = text(
    """
    SELECT e.memory_id, e.session_id, s.kind AS session_kind, e.summary, e.topics,
           e.outcomes, e.open_threads, e.message_count, e.ended_at
    FROM episodes e JOIN chat_sessions s ON s.id = e.session_id
    WHERE e.namespace = :namespace AND e.ended_at > :start AND e.ended_at <= :end
    ORDER BY e.ended_at, e.session_id
    """
)

_DECISIONS = text(
    """
    SELECT id, content FROM memories
    WHERE namespace = :namespace AND kind = 'decision'
      AND occurred_at > :start AND occurred_at <= :end
    ORDER BY importance DESC, id
    """
)

_KIND_COUNTS = text(
    """
    SELECT kind, count(*) FROM memories
    WHERE namespace = :namespace AND kind <> 'long_term'
      AND occurred_at > :start AND occurred_at <= :end
    GROUP BY kind ORDER BY kind
    """
)


def _params(namespace: str, window: tuple[datetime, datetime]) -> dict[str, Any]:
    return {"namespace": namespace, "start": window[0], "end": window[1]}


def week_episodes(
    session: Session, namespace: str, window: tuple[datetime, datetime]
) -> Sequence[Row[Any]]:
    """Episodes whose session ended in the window, oldest first."""
    return session.execute(_EPISODES, _params(namespace, window)).all()


def week_decisions(
    session: Session, namespace: str, window: tuple[datetime, datetime]
) -> list[tuple[int, str]]:
    """Decision memories of the window, most important first."""
    rows = session.execute(_DECISIONS, _params(namespace, window))
    return [(int(r.id), str(r.content)) for r in rows]


def week_kind_counts(
    session: Session, namespace: str, window: tuple[datetime, datetime]
) -> dict[str, int]:
    """How many memories of each kind occurred in the window."""
    rows = session.execute(_KIND_COUNTS, _params(namespace, window))
    return {str(kind): int(n) for kind, n in rows}
