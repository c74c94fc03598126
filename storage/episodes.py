"""``episodes``: the structured summary of a session's latest processed state (seed 003)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base


class Episode(Base):
    __tablename__ = "episodes"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(100), index=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("chat_sessions.id", ondelete="CASCADE"), unique=True
    )
    memory_id: Mapped[int | None] = mapped_column(
        ForeignKey("memories.id", ondelete="SET NULL"), index=True
    )
    summary: Mapped[str] = mapped_column(Text)
    topics: Mapped[list[str]] = mapped_column(ARRAY(Text))
    entities: Mapped[list[str]] = mapped_column(ARRAY(Text))
    user_state: Mapped[dict[str, Any]] = mapped_column(JSONB)
    outcomes: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    open_threads: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    importance: Mapped[float] = mapped_column(Float)
    vehemence: Mapped[float] = mapped_column(Float)
    urgency: Mapped[float] = mapped_column(Float)
    sentiment: Mapped[float] = mapped_column(Float)
    risk: Mapped[float] = mapped_column(Float)
    message_count: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    fingerprint: Mapped[str] = mapped_column(String(64))
    extractor: Mapped[str] = mapped_column(String(100))
    run_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    salience: Mapped[float] = mapped_column(Float, server_default="1")
    last_accessed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


def upsert_episodes(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert or replace the episode of each session (one per session)."""
    if not rows:
        return
    stmt = insert(Episode)
    keep = {"id", "session_id", "namespace", "created_at", "salience", "last_accessed_at"}
    fields = [c.name for c in Episode.__table__.columns if c.name not in keep]
    stmt = stmt.on_conflict_do_update(
        index_elements=[Episode.session_id],
        set_={**{f: stmt.excluded[f] for f in fields}, "updated_at": func.now()},
    )
    session.execute(stmt, rows)


def episode_text(title: str | None, summary: str) -> str:
    """An episode memory's text: the session's title first, unless the summary says it.

    The title is often the only place a word such as "Dentist" appears, so an episode is
    findable by it only if its memory carries it.
    """
    title = (title or "").strip()
    if not title or title.casefold() in summary.casefold():
        return summary
    return f"{title}. {summary}"


def summaries_by_session(session: Session, session_ids: Sequence[str]) -> dict[str, str]:
    """The episode summary of each of these sessions that has one."""
    stmt = select(Episode.session_id, Episode.summary).where(Episode.session_id.in_(session_ids))
    return {sid: summary for sid, summary in session.execute(stmt)}
