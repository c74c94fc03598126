"""Raw conversations: ``chat_sessions`` and ``chat_messages``, and how sources write them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from sqlalchemy import DateTime, ForeignKey, Index, String, Text, func, or_, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base
from storage.kernel.records import MessageRecord, Role, SessionKind, SessionRecord


class ChatSession(Base):
    __tablename__ = "chat_sessions"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(100), index=True)
    agent: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))
    title: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ChatMessage(Base):
    __tablename__ = "chat_messages"
    __table_args__ = (Index("ix_chat_messages_ts", "ts"),)

    session_id: Mapped[str] = mapped_column(
        ForeignKey("chat_sessions.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))
    speaker: Mapped[str] = mapped_column(String(200))
    content: Mapped[str] = mapped_column(Text)
    ts: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def record_session(session: Session, record: SessionRecord) -> None:
    """Insert a session, or update its fields if they changed."""
    values = record.model_dump()
    stmt = insert(ChatSession).values(**values)
    changed = [getattr(ChatSession, k).is_distinct_from(stmt.excluded[k]) for k in values]
    stmt = stmt.on_conflict_do_update(
        index_elements=[ChatSession.id],
        set_={**{k: stmt.excluded[k] for k in values if k != "id"}, "updated_at": func.now()},
        where=or_(*changed),
    )
    session.execute(stmt)


def record_messages(session: Session, session_id: str, messages: Sequence[MessageRecord]) -> None:
    """Insert messages of one session; a known id with new content or time is updated."""
    if not messages:
        return
    rows = [
        {
            "session_id": session_id,
            "id": m.id,
            "role": m.role,
            "speaker": m.speaker,
            "content": m.content,
            "ts": m.timestamp,
        }
        for m in messages
    ]
    stmt = insert(ChatMessage)
    fields = ("role", "speaker", "content", "ts")
    stmt = stmt.on_conflict_do_update(
        index_elements=[ChatMessage.session_id, ChatMessage.id],
        set_={k: stmt.excluded[k] for k in fields},
        where=or_(*[getattr(ChatMessage, k).is_distinct_from(stmt.excluded[k]) for k in fields]),
    )
    session.execute(stmt, rows)


def record_message(session: Session, session_id: str, message: MessageRecord) -> None:
    """Insert (or update) one message of a recorded session."""
    record_messages(session, session_id, [message])


def load_messages(
    session: Session, session_ids: Sequence[str], until: datetime
) -> dict[str, list[MessageRecord]]:
    """Messages of the given sessions up to ``until``, ordered by (time, id)."""
    stmt = (
        select(ChatMessage)
        .where(ChatMessage.session_id.in_(session_ids), ChatMessage.ts <= until)
        .order_by(ChatMessage.session_id, ChatMessage.ts, ChatMessage.id)
    )
    out: dict[str, list[MessageRecord]] = {sid: [] for sid in session_ids}
    for row in session.execute(stmt).scalars():
        out[row.session_id].append(
            MessageRecord.model_construct(
                id=row.id,
                role=cast(Role, row.role),
                speaker=row.speaker,
                content=row.content,
                timestamp=row.ts,
            )
        )
    return out


def load_sessions(session: Session, session_ids: Sequence[str]) -> dict[str, SessionRecord]:
    """Session records by id."""
    stmt = select(ChatSession).where(ChatSession.id.in_(session_ids))
    return {
        row.id: SessionRecord.model_construct(
            id=row.id,
            namespace=row.namespace,
            agent=row.agent,
            kind=cast(SessionKind, row.kind),
            title=row.title,
        )
        for row in session.execute(stmt).scalars()
    }


# Rows of the namespaces that did not come from the given sessions: other sessions, and
# memories written without one of them (the queue, the tidy).
OTHER_DATA = text(
    """
    SELECT namespace, count(*) FROM (
        SELECT namespace FROM chat_sessions
        WHERE namespace = ANY(:namespaces) AND NOT id = ANY(:ids)
        UNION ALL
        SELECT namespace FROM memories
        WHERE namespace = ANY(:namespaces)
          AND (session_id IS NULL OR NOT session_id = ANY(:ids))
    ) AS other
    GROUP BY namespace ORDER BY namespace
    """
)


def other_data(
    session: Session, namespaces: Sequence[str], session_ids: Sequence[str]
) -> dict[str, int]:
    """Per namespace, how many sessions and memories did not come from ``session_ids``."""
    params = {"namespaces": list(namespaces), "ids": list(session_ids)}
    return {str(ns): int(n) for ns, n in session.execute(OTHER_DATA, params)}
