"""The documents' tables and records: ``documents`` and ``document_chunks`` as SQLAlchemy
maps, what ingest compares and writes, and the source a queued document is stored under."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import BigInteger, Computed, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from storage.kernel.base import Base


class Document(Base):
    __tablename__ = "documents"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(100))
    uri: Mapped[str] = mapped_column(Text)
    title: Mapped[str] = mapped_column(Text)
    tag: Mapped[str | None] = mapped_column(String(100))
    format: Mapped[str] = mapped_column(String(20))
    content_hash: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    text: Mapped[str] = mapped_column(Text)
    chunk_size: Mapped[int] = mapped_column(Integer)
    overlap: Mapped[int] = mapped_column(Integer)
    ingested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    queue_item: Mapped[int | None] = mapped_column(BigInteger)


class DocumentChunk(Base):
    __tablename__ = "document_chunks"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    namespace: Mapped[str] = mapped_column(String(100))
    ordinal: Mapped[int] = mapped_column(Integer)
    heading: Mapped[str] = mapped_column(Text, server_default="")
    text: Mapped[str] = mapped_column(Text)
    char_start: Mapped[int] = mapped_column(Integer)
    char_end: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64))
    embedding: Mapped[Any] = mapped_column(Vector())
    embedding_model: Mapped[str] = mapped_column(String(200))
    importance: Mapped[float] = mapped_column(Float, server_default="0.5")
    feedback_up: Mapped[int] = mapped_column(Integer, server_default="0")
    feedback_down: Mapped[int] = mapped_column(Integer, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    tsv: Mapped[Any] = mapped_column(
        TSVECTOR, Computed("to_tsvector('english', archivist_segmented(heading || ' ' || text))")
    )


UPLOAD = "upload:"


def upload_uri(name: str) -> str:
    """The URI of a document added over the HTTP API or MCP under ``name``."""
    return UPLOAD + name


def upload_name(uri: str) -> str | None:
    """The name a document was added under over the HTTP API or MCP; None for a file."""
    return uri.removeprefix(UPLOAD) if uri.startswith(UPLOAD) else None


@dataclass(frozen=True)
class StoredDocument:
    """What ingest compares a file with: its id, bytes' hash, chunking and tag (and, added
    through the queue, the item that last wrote it)."""

    id: int
    content_hash: str
    chunk_size: int
    overlap: int
    tag: str | None
    queue_item: int | None = None


@dataclass(frozen=True)
class NewDocument:
    """A document to insert or update (by namespace and URI)."""

    namespace: str
    uri: str
    title: str
    tag: str | None
    format: str
    content_hash: str
    size: int
    text: str
    chunk_size: int
    overlap: int
    at: datetime
    queue_item: int | None = None


@dataclass(frozen=True)
class NewChunk:
    """One span of a document's text, embedded."""

    ordinal: int
    heading: str
    text: str
    char_start: int
    char_end: int
    content_hash: str
    embedding: np.ndarray
