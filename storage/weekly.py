"""The weekly summary: the reads behind it (a namespace's episodes and memories of one
window), and ``weekly_summaries``, the record of each summary written: its window, time
zone and the sessions it quotes, so that a ``purge`` finds and rebuilds it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Date, DateTime, Row, String, Text, delete, select, text
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base


class WeeklySummary(Base):
    __tablename__ = "weekly_summaries"

    namespace: Mapped[str] = mapped_column(String(100), primary_key=True)
    monday: Mapped[date] = mapped_column(Date, primary_key=True)
    window_start: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    window_end: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    timezone: Mapped[str] = mapped_column(Text)
    session_ids: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


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


# The sessions a summary quotes: its episodes' (summary, topics, open threads) and its
# decisions'.
_SESSIONS = text(
    """
    SELECT e.session_id FROM episodes e JOIN chat_sessions s ON s.id = e.session_id
    WHERE e.namespace = :namespace AND e.ended_at > :start AND e.ended_at <= :end
    UNION
    SELECT session_id FROM memories
    WHERE namespace = :namespace AND kind = 'decision' AND session_id IS NOT NULL
      AND occurred_at > :start AND occurred_at <= :end
    ORDER BY 1
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


def week_sessions(session: Session, namespace: str, window: tuple[datetime, datetime]) -> list[str]:
    """The sessions whose text a summary of the window quotes."""
    return [str(s) for s in session.execute(_SESSIONS, _params(namespace, window)).scalars()]


def record_summary(session: Session, summary: WeeklySummary) -> None:
    """Record (or replace) the trace of one namespace's summary of one week."""
    values = {c.name: getattr(summary, c.name) for c in WeeklySummary.__table__.columns}
    stmt = insert(WeeklySummary).values(values)
    keys = {"namespace", "monday"}
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=list(keys),
            set_={k: stmt.excluded[k] for k in values if k not in keys},
        )
    )


def summaries_quoting(session: Session, namespace: str, session_id: str) -> list[WeeklySummary]:
    """The recorded summaries of the namespace that quote the session, oldest week first."""
    stmt = (
        select(WeeklySummary)
        .where(
            WeeklySummary.namespace == namespace,
            WeeklySummary.session_ids.contains([session_id]),
        )
        .order_by(WeeklySummary.monday)
    )
    return list(session.scalars(stmt))


def drop_summary(session: Session, namespace: str, monday: date) -> None:
    session.execute(
        delete(WeeklySummary).where(
            WeeklySummary.namespace == namespace, WeeklySummary.monday == monday
        )
    )
