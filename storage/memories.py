"""``memories``: every retrievable item (episode, fact, turn, task card, note), with its vector.

The vector column's dimension is fixed by the migration from the settings and recorded in
``archivist_meta``; the model here declares it without a size.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import numpy as np
from pgvector.psycopg import register_vector
from pgvector.sqlalchemy import Vector
from psycopg import Connection
from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    delete,
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSVECTOR, UUID
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel import scoring
from storage.kernel.base import Base


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (
        UniqueConstraint("session_id", "kind", "content_key"),
        Index("ix_memories_namespace_kind", "namespace", "kind"),
        Index("ix_memories_namespace_occurred_at", "namespace", "occurred_at"),
        Index("ix_memories_scoped_tsv", "scoped_tsv", postgresql_using="gin"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(30))
    content: Mapped[str] = mapped_column(Text)
    content_key: Mapped[str] = mapped_column(String(64))
    embedding: Mapped[Any] = mapped_column(Vector())
    embedding_model: Mapped[str] = mapped_column(String(200))
    importance: Mapped[float] = mapped_column(Float, server_default="0.5")
    vehemence: Mapped[float] = mapped_column(Float, server_default="0")
    salience: Mapped[float] = mapped_column(Float, server_default="1")
    access_count: Mapped[int] = mapped_column(Integer, server_default="0")
    last_accessed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tier: Mapped[str] = mapped_column(String(20), server_default="fresh")
    pinned: Mapped[bool] = mapped_column(Boolean, server_default="false")
    session_id: Mapped[str | None] = mapped_column(
        ForeignKey("chat_sessions.id", ondelete="CASCADE"), index=True
    )
    message_ids: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}")
    run_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    extractor: Mapped[str | None] = mapped_column(String(100))
    occurred_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    tsv: Mapped[Any] = mapped_column(
        TSVECTOR, Computed("to_tsvector('english', archivist_segmented(content))", persisted=True)
    )
    # The lexemes without positions, each as "namespace:lexeme" (migration 0018).
    scoped_tsv: Mapped[Any] = mapped_column(
        TSVECTOR,
        Computed(
            "archivist_scoped_lexemes(namespace, "
            "to_tsvector('english', archivist_segmented(content)))",
            persisted=True,
        ),
    )


@dataclass(frozen=True)
class NewMemory:
    """A memory to insert; ``content_key`` makes re-insertion of the same item a no-op."""

    namespace: str
    kind: str
    content: str
    content_key: str
    embedding: np.ndarray
    embedding_model: str
    importance: float
    vehemence: float
    session_id: str | None
    message_ids: tuple[str, ...]
    run_id: uuid.UUID | None
    extractor: str | None
    occurred_at: datetime
    created_at: datetime


def existing_keys(session: Session, session_ids: Sequence[str]) -> dict[tuple[str, str, str], int]:
    """Map (session_id, kind, content_key) to memory id for the given sessions."""
    stmt = select(Memory.session_id, Memory.kind, Memory.content_key, Memory.id).where(
        Memory.session_id.in_(session_ids)
    )
    return {(r[0], r[1], r[2]): r[3] for r in session.execute(stmt)}


def delete_memories(session: Session, ids: Iterable[int]) -> int:
    """Delete memories by id; returns how many went."""
    id_list = list(ids)
    if not id_list:
        return 0
    result = session.execute(delete(Memory).where(Memory.id.in_(id_list)))
    return int(getattr(result, "rowcount", 0))


_COPY_COLUMNS = (
    ("id", "int8"),
    ("namespace", "text"),
    ("kind", "text"),
    ("content", "text"),
    ("content_key", "text"),
    ("embedding", "vector"),
    ("embedding_model", "text"),
    ("importance", "float8"),
    ("vehemence", "float8"),
    ("salience", "float8"),
    ("session_id", "text"),
    ("message_ids", "text[]"),
    ("run_id", "uuid"),
    ("extractor", "text"),
    ("occurred_at", "timestamptz"),
    ("created_at", "timestamptz"),
)
_NEXT_IDS = text(
    "SELECT nextval(pg_get_serial_sequence('memories', 'id')) FROM generate_series(1, :n)"
)


def insert_memories(
    session: Session, rows: Sequence[NewMemory], *, half_life_days: float | None = None
) -> list[int]:
    """Insert memories with binary COPY and return their ids, in order.

    Ids come from the table's identity sequence first, so COPY (about 30x faster than
    row-by-row inserts with vectors) can still tell the caller which id each row got.
    With ``half_life_days``, salience starts decayed from ``occurred_at`` to ``created_at``
    (a back-filled memory of last year is not fresh), so the next decay has nothing to
    rewrite; without it, it starts at 1.
    """
    if not rows:
        return []
    ids = list(session.execute(_NEXT_IDS, {"n": len(rows)}).scalars())
    conn = cast(Connection[Any], session.connection().connection.driver_connection)
    if conn.adapters.types.get("vector") is None:  # once per connection: 4 catalog queries
        register_vector(conn)
    names = ", ".join(name for name, _ in _COPY_COLUMNS)
    with conn.cursor() as cursor:
        with cursor.copy(f"COPY memories ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _COPY_COLUMNS])
            for mid, row in zip(ids, rows, strict=True):
                copy.write_row(_copy_row(mid, row, half_life_days))
    return ids


def _copy_row(mid: int, row: NewMemory, half_life_days: float | None) -> tuple[object, ...]:
    age_days = (row.created_at - row.occurred_at).total_seconds() / 86400
    return (
        mid,
        row.namespace,
        row.kind,
        row.content,
        row.content_key,
        row.embedding,
        row.embedding_model,
        row.importance,
        row.vehemence,
        1.0 if half_life_days is None else scoring.salience(0, age_days, half_life_days),
        row.session_id,
        list(row.message_ids),
        row.run_id,
        row.extractor,
        row.occurred_at,
        row.created_at,
    )


def ids_by_session(session: Session, session_ids: Sequence[str]) -> dict[str, list[int]]:
    """Memory ids of each session, ascending."""
    stmt = (
        select(Memory.session_id, Memory.id)
        .where(Memory.session_id.in_(session_ids))
        .order_by(Memory.session_id, Memory.id)
    )
    out: dict[str, list[int]] = {sid: [] for sid in session_ids}
    for sid, mid in session.execute(stmt):
        if sid is not None:
            out[sid].append(mid)
    return out


def count_by_namespace(session: Session) -> dict[tuple[str, str], int]:
    """Number of memories per (namespace, kind)."""
    stmt = select(Memory.namespace, Memory.kind, func.count()).group_by(
        Memory.namespace, Memory.kind
    )
    return {(ns, kind): n for ns, kind, n in session.execute(stmt)}


def contents_by_session(
    session: Session, session_ids: Sequence[str], kinds: Sequence[str]
) -> dict[str, list[str]]:
    """Texts of the memories of these kinds of each session, in id order."""
    stmt = (
        select(Memory.session_id, Memory.content)
        .where(Memory.session_id.in_(session_ids), Memory.kind.in_(kinds))
        .order_by(Memory.session_id, Memory.id)
    )
    out: dict[str, list[str]] = {sid: [] for sid in session_ids}
    for sid, content in session.execute(stmt):
        if sid is not None:
            out[sid].append(content)
    return out
