"""``memory_write_queue``: durable memory writes, claimed by any number of drainers.

    enqueue -> pending --claim--> processing --complete--> completed --purge--> gone
                  ^                    |
                  +--------------------+  fail, stuck or worker gone: while attempts <
                                       |      max_attempts (after a backoff on fail)
                                       +--> dead, kept with its last error

Payloads are validated at enqueue time (``_payloads``); a bad one raises
``InputError`` and stores nothing. Every function takes ``now``: a pinned time, or
``None`` for the database clock, so producers and drainers on different hosts agree.
A claim is (worker, attempt): completing or failing an item whose claim was taken over
(by reclaim) changes nothing, so its work can be rolled back with it.

A claim also records the claiming backend's pid (``pg_backend_pid()``), and the claimer
keeps that connection open until it completes or fails the items. A worker killed
mid-batch takes its backend with it; once that pid has left ``pg_stat_activity`` its
claims are reclaimed at the next claim, not after ``stuck_after_seconds``. A live worker's
backend is always listed, so its claims are never taken for gone. The stuck timeout stays
the fallback: behind a transaction-pooling proxy a backend is not a worker, and some
managed servers hide other sessions; there set ``detect_gone_workers`` off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Literal, cast

import psycopg
from sqlalchemy import (
    BigInteger,
    DateTime,
    Engine,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base
from storage.kernel.errors import InputError
from storage.kernel.records import storable
from storage.kernel.settings import DocumentSettings, QueueSettings, Settings
from storage.memories import Memory
from storage.queue._payloads import (
    DeadItem,
    Enqueued,
    QueueItem,
    QueueStats,
    Reclaimed,
    redacted,
    validate_payload,
)
from storage.queue._sql import (
    ASYNC_COMMIT,
    BY_KEY,
    CLAIM,
    COMPLETE,
    DEAD,
    ENQUEUE,
    FAIL,
    FORGET_MEMORY,
    FRESH_ACTIVITY,
    LISTEN,
    PURGE,
    RECLAIM,
    STATS,
    UNLISTEN,
)
from storage.redaction import RedactionPolicy

_MAX_ERROR_CHARS = 2000


class QueueItemRow(Base):
    __tablename__ = "memory_write_queue"
    __table_args__ = (
        UniqueConstraint("namespace", "idempotency_key"),
        Index(
            "ix_memory_write_queue_claim",
            "status",
            "available_at",
            "id",
            postgresql_where=text("status IN ('pending', 'processing')"),
        ),
        Index(
            "ix_memory_write_queue_completed",
            "completed_at",
            postgresql_where=text("status = 'completed'"),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(100))
    op: Mapped[str] = mapped_column(String(30))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB)
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), server_default="pending")
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    max_attempts: Mapped[int] = mapped_column(Integer)
    available_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(100))
    claimer_pid: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


def enqueue(
    session: Session,
    namespace: str,
    op: str,
    payload: Mapping[str, Any],
    *,
    idempotency_key: str | None = None,
    now: datetime | None = None,
    settings: Settings | None = None,
) -> Enqueued:
    """Validate and queue one write; the same idempotency key again gives back the first item.

    ``settings`` (default: the defaults): its queue's attempts per item, its documents' size
    cap, and with ``redaction.before_storage`` the payload's texts are stored redacted, one
    placeholder scope per item.
    """
    documents = settings.documents if settings is not None else DocumentSettings()
    parsed = validate_payload(namespace, op, payload, max_document_bytes=documents.max_upload_bytes)
    redaction = settings.redaction if settings is not None else None
    policy = RedactionPolicy.from_settings(redaction) if redaction is not None else None
    if policy is not None and policy.before_storage:
        parsed = redacted(parsed, policy.redactor())
    _check_key(idempotency_key)
    params = {
        "namespace": namespace,
        "op": op,
        "payload": parsed.model_dump_json(exclude_none=True),
        "idempotency_key": idempotency_key,
        "max_attempts": (settings.queue if settings is not None else QueueSettings()).max_attempts,
        "now": now,
    }
    new_id = session.execute(ENQUEUE, params).scalar()
    if new_id is None:  # the key is already queued: hand back that item
        return Enqueued(id=int(session.execute(BY_KEY, params).scalar_one()), duplicate=True)
    return Enqueued(id=int(new_id), duplicate=False)


def _check_key(idempotency_key: str | None) -> None:
    if idempotency_key is not None:
        if not 1 <= len(idempotency_key) <= 200:
            raise InputError("idempotency_key must be 1 to 200 characters long")
        try:
            storable(idempotency_key)
        except ValueError as exc:
            raise InputError(f"idempotency_key {exc}") from exc


def relax_commit(session: Session) -> None:
    """Let this transaction commit without waiting for the WAL flush (drainers only)."""
    session.execute(ASYNC_COMMIT)


def claim(session: Session, worker: str, limit: int, now: datetime | None) -> list[QueueItem]:
    """Take up to ``limit`` due items, oldest first, skipping rows other drainers hold.

    Keep the session's connection open until the items are completed or failed: the claim
    lives as long as this backend does.
    """
    rows = session.execute(CLAIM, {"worker": worker, "limit": limit, "now": now}).mappings()
    items = [QueueItem(**row) for row in rows]
    return sorted(items, key=lambda item: item.id)


def complete(
    session: Session,
    done: Sequence[tuple[QueueItem, Mapping[str, Any]]],
    now: datetime | None,
) -> set[int]:
    """Mark items completed with their results; returns the ids whose claim still held."""
    if not done:
        return set()
    params = {
        "ids": [item.id for item, _ in done],
        "workers": [item.claimed_by for item, _ in done],
        "attempts": [item.attempts for item, _ in done],
        "results": [json.dumps(result) for _, result in done],
        "now": now,
    }
    return set(session.execute(COMPLETE, params).scalars())


def backoff(attempts: int, settings: QueueSettings) -> timedelta:
    """Wait before the next attempt after ``attempts`` failed ones: base * 2**(n-1), capped."""
    seconds = settings.backoff_base_seconds * 2 ** max(0, attempts - 1)
    return timedelta(seconds=min(settings.backoff_max_seconds, seconds))


def fail(
    session: Session,
    item: QueueItem,
    error: str,
    now: datetime | None,
    settings: QueueSettings,
    *,
    permanent: bool = False,
) -> Literal["pending", "dead", "lost"]:
    """Record a failed attempt: back to pending after a backoff, or dead when none are left.

    ``permanent``: retrying cannot help, so the item is dead at once with ``error``.
    """
    params = {
        "id": item.id,
        "worker": item.claimed_by,
        "attempts": item.attempts,
        "error": error[:_MAX_ERROR_CHARS],
        "delay": backoff(item.attempts, settings),
        "permanent": permanent,
        "now": now,
    }
    status = session.execute(FAIL, params).scalar()
    if status is None:
        return "lost"
    return "dead" if status == "dead" else "pending"


def reclaim(
    session: Session, now: datetime | None, stuck_after: timedelta, *, gone_workers: bool = True
) -> Reclaimed:
    """Give back items whose worker is gone or that are processing longer than ``stuck_after``.

    Exhausted ones go dead. ``gone_workers`` off: only the stuck timeout applies.
    """
    session.execute(FRESH_ACTIVITY)
    params = {"now": now, "stuck_after": stuck_after, "gone_claimers": gone_workers}
    statuses = list(session.execute(RECLAIM, params).scalars())
    return Reclaimed(requeued=statuses.count("pending"), dead=statuses.count("dead"))


def purge_completed(session: Session, now: datetime | None, older_than: timedelta) -> int:
    """Delete completed items finished more than ``older_than`` ago; returns how many."""
    result = session.execute(PURGE, {"now": now, "older_than": older_than})
    return int(getattr(result, "rowcount", 0))


def queue_stats(
    session: Session,
    now: datetime | None,
    settings: QueueSettings | None = None,
    namespace: str | None = None,
) -> QueueStats:
    """Counts per status, ready, stuck and abandoned items, and the oldest pending one's wait;
    of one namespace's items, or of all."""
    settings = settings or QueueSettings()
    params = {
        "namespace": namespace,
        "now": now,
        "stuck_after": timedelta(seconds=settings.stuck_after_seconds),
        "gone_claimers": settings.detect_gone_workers,
    }
    session.execute(FRESH_ACTIVITY)
    row = session.execute(STATS, params).mappings().one()
    oldest = row["oldest_pending_seconds"]
    return QueueStats(
        **{k: int(v) for k, v in row.items() if k != "oldest_pending_seconds"},
        oldest_pending_seconds=None if oldest is None else float(oldest),
    )


def dead_items(session: Session, limit: int = 20) -> list[DeadItem]:
    """The most recently failed dead items, with their errors."""
    return [DeadItem(**row) for row in session.execute(DEAD, {"limit": limit}).mappings()]


def forget_memory(
    session: Session, namespace: str, memory_id: int
) -> Literal["deleted", "missing", "foreign"]:
    """Delete a memory of ``namespace``; one of another namespace is never touched.

    A ``turn`` memory is one chunk of its message: the message's other chunks go too, or
    search would show the next of them in its place.
    """
    params = {"id": memory_id, "namespace": namespace}
    if session.execute(FORGET_MEMORY, params).first() is not None:
        return "deleted"
    owner = session.execute(select(Memory.namespace).where(Memory.id == memory_id)).scalar()
    return "missing" if owner is None else "foreign"


@contextmanager
def notifications(engine: Engine) -> Iterator[Callable[[float], bool]]:
    """A wait(timeout) that returns early, True, when an item is enqueued (LISTEN/NOTIFY)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(LISTEN)
        raw = cast(psycopg.Connection[Any], conn.connection.driver_connection)

        def wait(timeout: float) -> bool:
            return any(True for _ in raw.notifies(timeout=timeout, stop_after=1))

        try:
            yield wait
        finally:
            conn.execute(UNLISTEN)
