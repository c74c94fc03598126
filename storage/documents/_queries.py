"""The documents' queries: each takes a session and never commits (see ``storage.documents``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, text, true, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from storage.documents._model import (
    Document,
    DocumentChunk,
    NewChunk,
    NewDocument,
    StoredDocument,
    upload_name,
)

_STORED = (
    Document.uri,
    Document.id,
    Document.content_hash,
    Document.chunk_size,
    Document.overlap,
    Document.tag,
    Document.queue_item,
)


def stored_documents(session: Session, namespace: str) -> dict[str, StoredDocument]:
    """The namespace's documents by URI."""
    stmt = select(*_STORED).where(Document.namespace == namespace)
    return {r.uri: StoredDocument(*r[1:]) for r in session.execute(stmt)}


def stored_document(session: Session, namespace: str, uri: str) -> StoredDocument | None:
    """The namespace's document of ``uri``, or None."""
    stmt = select(*_STORED).where(Document.namespace == namespace, Document.uri == uri)
    row = session.execute(stmt).first()
    return None if row is None else StoredDocument(*row[1:])


def _not_later(queue_item: int | None) -> Any:
    """Rows a write of ``queue_item`` may change: any for a file's ingest (None), else those
    no later queue item wrote."""
    if queue_item is None:
        return true()
    return or_(Document.queue_item.is_(None), Document.queue_item < queue_item)


def save_document(session: Session, doc: NewDocument, existing: int | None) -> int | None:
    """Insert the document, or update the row ``existing``; its id. None: nothing written,
    since the row is gone or a later queue item wrote it (``NewDocument.queue_item``)."""
    newer = _not_later(doc.queue_item)
    values = {
        "title": doc.title,
        "tag": doc.tag,
        "format": doc.format,
        "content_hash": doc.content_hash,
        "size": doc.size,
        "text": doc.text,
        "chunk_size": doc.chunk_size,
        "overlap": doc.overlap,
        "updated_at": doc.at,
        "queue_item": doc.queue_item,
    }
    if existing is not None:
        changed = update(Document).where(Document.id == existing, newer).values(**values)
        return session.execute(changed.returning(Document.id)).scalar()
    row = {"namespace": doc.namespace, "uri": doc.uri, "ingested_at": doc.at, **values}
    # Another ingest of the same new file may have inserted it since this one looked: its row
    # is taken over (the chunks are replaced next), where the insert would stop this run.
    added = pg_insert(Document).values(**row)
    added = added.on_conflict_do_update(
        constraint="uq_documents_namespace_uri", set_=values, where=newer
    )
    return session.execute(added.returning(Document.id)).scalar()


def touch(
    session: Session,
    document_id: int,
    queue_item: int,
    at: datetime,
    *,
    tag: str | None = None,
    title: str | None = None,
) -> bool:
    """A queue item that found the document's bytes unchanged: it becomes the item that last
    wrote it, with the tag and title it gives (None: kept); False when a later item wrote
    it."""
    labels = {"tag": tag, "title": title}
    given = {name: value for name, value in labels.items() if value is not None}
    stmt = (
        update(Document)
        .where(Document.id == document_id, _not_later(queue_item))
        .values(queue_item=queue_item, updated_at=at, **given)
    )
    return session.execute(stmt.returning(Document.id)).first() is not None


def set_tag(session: Session, document_id: int, tag: str | None, at: datetime) -> None:
    """Change only a document's tag."""
    stmt = update(Document).where(Document.id == document_id).values(tag=tag, updated_at=at)
    session.execute(stmt)


def set_chunking(session: Session, document_id: int, size: int, overlap: int, at: datetime) -> None:
    """Record the chunking a document's chunks were cut with."""
    values = {"chunk_size": size, "overlap": overlap, "updated_at": at}
    session.execute(update(Document).where(Document.id == document_id).values(**values))


def replace_chunks(
    session: Session,
    document_id: int,
    namespace: str,
    chunks: Sequence[NewChunk],
    model: str,
    at: datetime,
) -> int:
    """Delete the document's chunks and insert ``chunks``; importance and feedback carry
    over to a new chunk whose text an old one had. Returns how many were written."""
    kept = {
        r.content_hash: (r.importance, r.feedback_up, r.feedback_down)
        for r in session.execute(
            select(
                DocumentChunk.content_hash,
                DocumentChunk.importance,
                DocumentChunk.feedback_up,
                DocumentChunk.feedback_down,
            ).where(DocumentChunk.document_id == document_id)
        )
    }
    session.execute(delete(DocumentChunk).where(DocumentChunk.document_id == document_id))
    if not chunks:
        return 0
    rows = []
    for c in chunks:
        importance, up, down = kept.get(c.content_hash, (0.5, 0, 0))
        rows.append(
            {
                "document_id": document_id,
                "namespace": namespace,
                "ordinal": c.ordinal,
                "heading": c.heading,
                "text": c.text,
                "char_start": c.char_start,
                "char_end": c.char_end,
                "content_hash": c.content_hash,
                "embedding": c.embedding,
                "embedding_model": model,
                "importance": importance,
                "feedback_up": up,
                "feedback_down": down,
                "created_at": at,
            }
        )
    session.execute(insert(DocumentChunk), rows)
    return len(rows)


LIST = text(
    """
    SELECT d.id, d.uri, d.title, d.tag, d.format, d.size, d.content_hash, d.ingested_at,
           d.updated_at, count(c.id) AS chunks
    FROM documents d LEFT JOIN document_chunks c ON c.document_id = d.id
    WHERE d.namespace = :namespace
    GROUP BY d.id ORDER BY d.uri
    """
)


def list_documents(session: Session, namespace: str) -> list[dict[str, Any]]:
    """The namespace's documents with their chunk counts, by URI."""
    return [dict(r._mapping) for r in session.execute(LIST, {"namespace": namespace})]


@dataclass(frozen=True)
class Purged:
    """Documents deleted: their ids, the chunks deleted with them, and the names of those
    that were added over the HTTP API or MCP (``upload_name``)."""

    ids: list[int]
    chunks: int
    names: list[str]


def purge_documents(
    session: Session, namespace: str, *, document_id: int | None = None, tag: str | None = None
) -> Purged:
    """Delete one document (by id) or every document with ``tag``, and their chunks."""
    where = [Document.namespace == namespace]
    where.append(Document.id == document_id if document_id is not None else Document.tag == tag)
    found = session.execute(select(Document.id, Document.uri).where(*where).order_by(Document.id))
    rows = found.all()
    if not rows:
        return Purged([], 0, [])
    ids = [r.id for r in rows]
    chunks = session.execute(delete(DocumentChunk).where(DocumentChunk.document_id.in_(ids)))
    session.execute(delete(Document).where(Document.id.in_(ids)))
    names = [n for n in (upload_name(r.uri) for r in rows) if n is not None]
    return Purged(ids, int(getattr(chunks, "rowcount", 0)), names)


def documents_of(session: Session, namespace: str) -> list[Document]:
    """Every document of the namespace (with its text), by id."""
    stmt = select(Document).where(Document.namespace == namespace).order_by(Document.id)
    return list(session.scalars(stmt))


FEEDBACK = text(
    """
    UPDATE document_chunks
    SET importance = least(1.0, greatest(0.0, importance + :delta)),
        feedback_up = feedback_up + CASE WHEN :delta > 0 THEN 1 ELSE 0 END,
        feedback_down = feedback_down + CASE WHEN :delta < 0 THEN 1 ELSE 0 END
    WHERE id = :id
    RETURNING namespace, importance, feedback_up, feedback_down
    """
)


def give_feedback(session: Session, chunk_id: int, delta: float) -> dict[str, Any] | None:
    """Move a chunk's importance by ``delta`` within [0, 1]; its new state, None if absent."""
    row = session.execute(FEEDBACK, {"id": chunk_id, "delta": delta}).one_or_none()
    return None if row is None else dict(row._mapping)


def chunk_count(session: Session, namespace: str | None = None) -> int:
    """Chunks stored (in one namespace, or in all)."""
    stmt = select(func.count(DocumentChunk.id))
    if namespace is not None:
        stmt = stmt.where(DocumentChunk.namespace == namespace)
    return int(session.scalar(stmt) or 0)
