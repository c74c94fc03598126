"""Documents after ingest: list, purge (audited), rebuild from the stored text, feedback.

``rebuild`` re-chunks and re-embeds each document from the text stored at ingest, not from
its source, so it works after a file moved or left, and after a change of embedder or of
chunking (``chunking`` overrides each document's own); a chunk whose text is unchanged
keeps its importance. Each document is replaced in its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import audit, queue
from storage import documents as store
from storage.embedding import Embedder
from storage.kernel.errors import InputError
from tasks.documents._chunk import chunk
from tasks.documents._ingest import check_names
from tasks.documents._write import Chunking, embedded


def list_documents(engine: Engine, namespace: str) -> list[dict[str, Any]]:
    """The namespace's documents with their chunk counts."""
    check_names(namespace, None)
    with Session(engine) as session:
        return store.list_documents(session, namespace)


def purge_documents(
    engine: Engine,
    namespace: str,
    *,
    document_id: int | None = None,
    tag: str | None = None,
    actor: str,
) -> tuple[list[int], int]:
    """Erase one document or all of a tag with their chunks, and the queue items that carry
    their text (those added over the HTTP API or MCP); one audit row (ids, counts)."""
    check_names(namespace, tag)
    if (document_id is None) == (tag is None):
        raise InputError("purge takes a document id or --tag, not both and not neither")
    with Session(engine) as session, session.begin():
        purged = store.purge_documents(session, namespace, document_id=document_id, tag=tag)
        ids, chunks = purged.ids, purged.chunks
        queue.forget_documents(session, namespace, purged.names)
        if not ids:
            what = f"document {document_id}" if tag is None else f"document tagged {tag!r}"
            raise InputError(f"no {what} in namespace {namespace!r}")
        details = {"documents": len(ids), "chunks": chunks, "document_ids": ids[:1000]}
        target = f"document:{document_id}" if tag is None else "tag"
        audit.record(
            session,
            "purge_documents",
            actor=actor,
            namespace=namespace,
            target=target,
            details=details,
        )
    return ids, chunks


@dataclass
class RebuildOutcome:
    documents: int = 0
    chunks: int = 0


def rebuild(
    engine: Engine,
    embedder: Embedder,
    namespace: str,
    at: datetime,
    chunking: Chunking | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RebuildOutcome:
    """Re-chunk and re-embed every document of the namespace from its stored text."""
    check_names(namespace, None)
    if chunking is not None:
        chunking.check()
    out = RebuildOutcome()
    with Session(engine) as session:
        docs = [
            (d.id, d.text, d.chunk_size, d.overlap) for d in store.documents_of(session, namespace)
        ]
    for done, (doc_id, text, size, overlap) in enumerate(docs, start=1):
        cut = chunking or Chunking(size, overlap)
        chunks = embedded(embedder, chunk(text, cut.size, cut.overlap))
        with Session(engine) as session, session.begin():
            store.set_chunking(session, doc_id, cut.size, cut.overlap, at)
            out.chunks += store.replace_chunks(
                session, doc_id, namespace, chunks, embedder.name, at
            )
        out.documents += 1
        if on_progress is not None:
            on_progress(done, len(docs))
    return out


def feedback(engine: Engine, chunk_id: int, vote: int, step: float) -> dict[str, Any]:
    """+1 or -1 on a chunk: its importance moves by ``step`` within [0, 1]."""
    if vote not in (1, -1):
        raise InputError(f"feedback is +1 or -1, not {vote}")
    with Session(engine) as session, session.begin():
        state = store.give_feedback(session, chunk_id, vote * step)
    if state is None:
        raise InputError(f"no document chunk {chunk_id}")
    return {"chunk_id": chunk_id, **state}
