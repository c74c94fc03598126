"""``memory_file_blocks``: the outbox of blocks bound for the memory files.

A block is committed here in the same transaction as the memories it describes; a later
step appends it to its file and marks it written. A crash between the two leaves the
block pending, and the next run appends it unless the file already holds its marker, so
each block reaches its file exactly once. A writer of a file holds its lock (``lock_path``)
from reading what is pending there to marking it written, so two processes delivering to
one file (the sync, the tidy, archival, a purge) never overwrite each other's appends.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    DateTime,
    Index,
    Select,
    String,
    Text,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base
from storage.kernel.shards import Shard, in_shard, shard_params

_T = TypeVar("_T", bound=tuple[Any, ...])


class FileBlock(Base):
    __tablename__ = "memory_file_blocks"
    __table_args__ = (
        Index(
            "ix_memory_file_blocks_pending",
            "namespace",
            "path",
            postgresql_where="written_at IS NULL",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(100))
    path: Mapped[str] = mapped_column(String(300))
    block_key: Mapped[str] = mapped_column(String(300), unique=True)
    content: Mapped[str] = mapped_column(Text)
    memory_ids: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))
    run_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    written_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


def add_blocks(session: Session, rows: Sequence[dict[str, object]]) -> None:
    """Queue blocks; a block key seen before is ignored (its state was already logged)."""
    if rows:
        session.execute(insert(FileBlock).on_conflict_do_nothing(), list(rows))


def pending_blocks(
    session: Session,
    namespace: str | None = None,
    shard: Shard | None = None,
    path: str | None = None,
) -> list[FileBlock]:
    """Blocks not yet written, in the order they were queued: of one namespace, of one
    shard's namespaces, of one file, or all."""
    stmt = select(FileBlock).where(FileBlock.written_at.is_(None)).order_by(FileBlock.id)
    if path is not None:
        stmt = stmt.where(FileBlock.path == path)
    return list(session.scalars(_scoped(stmt, namespace, shard)))


def pending_paths(
    session: Session, namespace: str | None = None, shard: Shard | None = None
) -> list[str]:
    """The files with blocks not yet written (of a namespace, a shard, or all), in the
    order their first pending block was queued."""
    stmt = (
        select(FileBlock.path)
        .where(FileBlock.written_at.is_(None))
        .group_by(FileBlock.path)
        .order_by(func.min(FileBlock.id))
    )
    return list(session.scalars(_scoped(stmt, namespace, shard)))


def _scoped(stmt: Select[_T], namespace: str | None, shard: Shard | None) -> Select[_T]:
    if namespace is not None:
        stmt = stmt.where(FileBlock.namespace == namespace)
    if shard is not None:
        in_this_shard = text(in_shard("memory_file_blocks.namespace"))
        stmt = stmt.where(in_this_shard.bindparams(**shard_params(shard)))
    return stmt


# One writer per file at a time, across processes; released when the transaction ends.
LOCK_PATH = text("SELECT pg_advisory_xact_lock(hashtextextended(:path, 0))")


def lock_path(session: Session, path: str) -> None:
    """Wait until no other transaction writes ``path``, and hold it until this one ends."""
    session.execute(LOCK_PATH, {"path": path})


def mark_written(session: Session, ids: Sequence[int]) -> None:
    """Record that these blocks are in their files."""
    if ids:
        session.execute(
            update(FileBlock).where(FileBlock.id.in_(list(ids))).values(written_at=func.now())
        )
