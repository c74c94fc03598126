"""``processed_sessions``: the fingerprint of each session's last processed state.

A session's state is every message up to a point in time. Its fingerprint hashes each
message's id, role, speaker, time and content in order, so a new message of any role
(an assistant-only tail included) or an edit anywhere gives a new state; replaying the
same messages gives the same fingerprint, and the sync writes nothing for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, text
from sqlalchemy.dialects.postgresql import UUID, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base
from storage.kernel.shards import Shard, in_shard, shard_params


class ProcessedSession(Base):
    __tablename__ = "processed_sessions"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("chat_sessions.id", ondelete="CASCADE"), primary_key=True
    )
    namespace: Mapped[str] = mapped_column(String(100), index=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    message_count: Mapped[int] = mapped_column(Integer)
    last_message_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    processed_as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    run_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))


@dataclass(frozen=True)
class Candidate:
    """A session active in the window, with its current and last processed fingerprint."""

    session_id: str
    namespace: str
    kind: str
    message_count: int
    user_messages: int
    assistant_messages: int  # with some text, not white space only
    last_message_at: datetime
    fingerprint: str
    processed_fingerprint: str | None
    processed_as_of: datetime | None


CANDIDATES = text(
    f"""
    WITH active AS (
        SELECT DISTINCT session_id FROM chat_messages WHERE ts > :start AND ts <= :end
    ), state AS (
        SELECT m.session_id,
               count(*) AS message_count,
               count(*) FILTER (WHERE m.role = 'user') AS user_messages,
               count(*) FILTER (WHERE m.role = 'assistant' AND m.content ~ '\\S')
                   AS assistant_messages,
               max(m.ts) AS last_message_at,
               md5(string_agg(
                   concat_ws(chr(31), m.id, m.role, m.speaker,
                             to_char(m.ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'),
                             md5(m.content)),
                   chr(30) ORDER BY m.ts, m.id)) AS fingerprint
        FROM chat_messages m JOIN active a ON a.session_id = m.session_id
        WHERE m.ts <= :end
        GROUP BY m.session_id
    )
    SELECT s.id, s.namespace, s.kind, st.message_count, st.user_messages,
           st.assistant_messages, st.last_message_at, st.fingerprint,
           p.fingerprint AS processed_fingerprint, p.processed_as_of
    FROM state st
    JOIN chat_sessions s ON s.id = st.session_id
    LEFT JOIN processed_sessions p ON p.session_id = s.id
    WHERE (CAST(:namespace AS text) IS NULL OR s.namespace = :namespace)
      AND {in_shard("s.namespace")}
    ORDER BY s.namespace, s.id
    """
)


def find_candidates(
    session: Session,
    start: datetime,
    end: datetime,
    namespace: str | None,
    shard: Shard | None = None,
) -> list[Candidate]:
    """Sessions with a message in (start, end], their state as of ``end``: of one
    namespace, of one shard's namespaces, or all."""
    params = {"start": start, "end": end, "namespace": namespace, **shard_params(shard)}
    rows = session.execute(CANDIDATES, params)
    return [Candidate(*row) for row in rows]


def mark_processed(session: Session, rows: Sequence[dict[str, object]]) -> None:
    """Record the fingerprint each session was processed at."""
    if not rows:
        return
    stmt = insert(ProcessedSession)
    stmt = stmt.on_conflict_do_update(
        index_elements=[ProcessedSession.session_id],
        set_={
            c: stmt.excluded[c]
            for c in (
                "fingerprint",
                "message_count",
                "last_message_at",
                "processed_as_of",
                "run_id",
            )
        },
    )
    session.execute(stmt, list(rows))
