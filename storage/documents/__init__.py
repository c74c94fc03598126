"""``documents`` and ``document_chunks``: ingested files of a namespace and their spans.

A document keeps the text extracted from its file; each chunk is a span of that text
(``char_start``..``char_end``, ``text`` equal to the span), the heading path above it, its
vector and an importance that feedback moves. Replacing a document's chunks keeps the
importance and feedback of chunks whose text did not change. Functions take a session and
never commit; the caller's transaction makes a replacement all or nothing.

A document added over the HTTP API or MCP is stored under ``upload:<name>`` and records the
queue item that last wrote it (``queue_item``): a write of an earlier item changes nothing,
so items of one document that finish out of order leave the last accepted one's text.
"""

from storage.documents._model import (
    UPLOAD,
    Document,
    DocumentChunk,
    NewChunk,
    NewDocument,
    StoredDocument,
    upload_name,
    upload_uri,
)
from storage.documents._queries import (
    FEEDBACK,
    LIST,
    Purged,
    chunk_count,
    documents_of,
    give_feedback,
    list_documents,
    purge_documents,
    replace_chunks,
    save_document,
    set_chunking,
    set_tag,
    stored_document,
    stored_documents,
    touch,
)

__all__ = [
    "FEEDBACK",
    "LIST",
    "UPLOAD",
    "chunk_count",
    "documents_of",
    "give_feedback",
    "list_documents",
    "purge_documents",
    "replace_chunks",
    "save_document",
    "set_chunking",
    "set_tag",
    "stored_document",
    "stored_documents",
    "touch",
    "upload_name",
    "upload_uri",
    "Document",
    "DocumentChunk",
    "NewChunk",
    "NewDocument",
    "Purged",
    "StoredDocument",
]
