"""``long_term_entries``: the lines of each namespace's ``MEMORY.md``, and the tidy's reads.

An entry is keyed by a hash of its normalised text. ``status`` says whether it is in the
file now; ``memory_ids`` are the memories merged into its line and ``session_ids`` the
sessions they came from (a session's later state replaces its memories, so only these
still lead a ``purge`` to the entry); ``memory_id`` is the ``long_term`` memory that makes
the entry searchable (cleared if that memory goes).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Row,
    String,
    Text,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base

LONG_TERM_KIND = "long_term"


class LongTermEntry(Base):
    __tablename__ = "long_term_entries"
    __table_args__ = (Index("ix_long_term_entries_status", "namespace", "status"),)

    namespace: Mapped[str] = mapped_column(String(100), primary_key=True)
    entry_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    section: Mapped[str] = mapped_column(String(30))
    memory_ids: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))
    session_ids: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}")
    pinned: Mapped[bool] = mapped_column(Boolean, server_default="false")
    score: Mapped[float] = mapped_column(Float)
    first_seen_week: Mapped[date] = mapped_column(Date)
    last_seen_week: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(String(3))
    memory_id: Mapped[int | None] = mapped_column(
        ForeignKey("memories.id", ondelete="SET NULL"), index=True
    )
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


# Memories that may enter MEMORY.md: the window's, the current entries', and pinned ones.
_CANDIDATES = text(
    """
    SELECT id, kind, content, importance, access_count, last_accessed_at, occurred_at, pinned,
           session_id, NOT (pinned OR (kind = ANY(:kinds) AND occurred_at > :start)) AS carried
    FROM memories
    WHERE namespace = :namespace
      AND kind <> 'long_term'
      AND occurred_at <= :end
      AND ((kind = ANY(:kinds) AND occurred_at > :start) OR pinned OR id = ANY(:carried))
    ORDER BY id
    """
)

_NAMESPACES = text(
    """
    SELECT namespace FROM memories
    UNION
    SELECT namespace FROM long_term_entries
    ORDER BY 1
    """
)


def namespaces(session: Session, only: str | None = None) -> list[str]:
    """Namespaces that have memories or long-term entries (or just ``only``)."""
    if only is not None:
        return [only]
    return list(session.execute(_NAMESPACES).scalars())


def entries(session: Session, namespace: str) -> dict[str, LongTermEntry]:
    """Every entry of a namespace, in or out, by key."""
    stmt = select(LongTermEntry).where(LongTermEntry.namespace == namespace)
    return {e.entry_key: e for e in session.scalars(stmt)}


def latest_week(session: Session, namespace: str) -> date | None:
    """The newest week a tidy wrote entries for, if any."""
    stmt = select(func.max(LongTermEntry.last_seen_week)).where(
        LongTermEntry.namespace == namespace
    )
    return session.execute(stmt).scalar_one()


def candidates(
    session: Session,
    namespace: str,
    kinds: Sequence[str],
    window: tuple[datetime, datetime],
    carried: Sequence[int],
) -> Sequence[Row[Any]]:
    """Candidate memories; ``carried`` is true for those only a current entry brings."""
    params = {
        "namespace": namespace,
        "kinds": list(kinds),
        "start": window[0],
        "end": window[1],
        "carried": list(carried),
    }
    return session.execute(_CANDIDATES, params).all()


def save_entries(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or update entries (first_seen_week is kept from the first insert)."""
    if not rows:
        return
    stmt = insert(LongTermEntry)
    keep = {"namespace", "entry_key", "first_seen_week"}
    fields = [c.name for c in LongTermEntry.__table__.columns if c.name not in keep]
    stmt = stmt.on_conflict_do_update(
        index_elements=[LongTermEntry.namespace, LongTermEntry.entry_key],
        set_={f: stmt.excluded[f] for f in fields},
    )
    session.execute(stmt, list(rows))


def mark_out(session: Session, namespace: str, keys: Sequence[str], when: datetime) -> None:
    """Entries that left ``MEMORY.md``: out, and no longer tied to a long_term memory."""
    if not keys:
        return
    session.execute(
        update(LongTermEntry)
        .where(LongTermEntry.namespace == namespace, LongTermEntry.entry_key.in_(list(keys)))
        .values(status="out", memory_id=None, updated_at=when)
    )
