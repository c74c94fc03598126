"""Documents added over the HTTP API or MCP: a drainer runs a queued ``ADD_DOCUMENT`` with
the steps ``docs ingest`` takes for a file (``_write``), in the drain's transaction, so the
document and the item's completion commit together: a crash in between leaves neither, and
the item runs again.

The document is stored under ``upload:<name>`` (``storage.documents.upload_uri``): the same
name again replaces it, and a replayed item finds its bytes unchanged and writes nothing
new. Items of one document may finish out of order (two drainers, or an earlier item
retried after a later one succeeded): each write carries its item id and loses to a later
item's, so the document ends as the last accepted request says (``superseded``). A
document that gives no text (an encrypted PDF, HTML without text) is skipped, as ingest
skips the file: the item completes with the reason, and a stored document of that name is
left as it was.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from storage import documents as store
from storage.embedding import Embedder
from storage.kernel.settings import DocumentSettings
from storage.queue import AddDocument
from tasks.documents._read import Skip, parse
from tasks.documents._write import Chunking, Incoming, document_rows, unchanged, write_rows


def add_uploaded(
    session: Session,
    embedder: Embedder,
    item: tuple[int, str],
    upload: AddDocument,
    settings: DocumentSettings,
    at: datetime,
) -> dict[str, Any]:
    """Store queue item ``item`` (id, namespace)'s document in the caller's transaction; what
    became of it: ``status`` added, updated, unchanged, superseded or skipped (with
    ``reason``), and the ``document_id``."""
    item_id, namespace = item
    uri = store.upload_uri(upload.name)
    existing = store.stored_document(session, namespace, uri)
    if existing is not None and (existing.queue_item or 0) > item_id:
        return {"status": "superseded", "document_id": existing.id}
    chunking = Chunking(settings.chunk_size, settings.overlap)
    tag = upload.tag if upload.tag is not None else (existing.tag if existing else None)
    incoming = Incoming(namespace, uri, upload.reader_path(), upload.data(), tag, upload.title)
    if existing is not None and unchanged(existing, incoming.digest, chunking):
        kept = store.touch(session, existing.id, item_id, at, tag=upload.tag, title=upload.title)
        return {"status": "unchanged" if kept else "superseded", "document_id": existing.id}
    try:
        parsed = parse(incoming.path, incoming.data)
    except Skip as skip:
        return {"status": "skipped", "reason": skip.reason, "detail": skip.detail}
    rows = document_rows(
        incoming, parsed, chunking, embedder, at, embed_batch=settings.embed_batch,
        queue_item=item_id,
    )  # fmt: skip
    written = write_rows(session, rows, existing.id if existing else None, embedder.name)
    if written is None:
        return {"status": "superseded", "document_id": existing.id if existing else None}
    status = "added" if existing is None else "updated"
    return {"status": status, "document_id": written[0], "chunks": written[1]}
