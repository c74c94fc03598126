"""The steps a document takes into the store, whichever door it came by (``docs ingest``
reading files, or a drainer running a queued ``ADD_DOCUMENT``): its bytes are compared with
the stored document of the same URI, parsed (``_read``), chunked on structure (``_chunk``),
embedded, and written with its chunks in the caller's transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from sqlalchemy.orm import Session

from storage import documents as store
from storage.embedding import Embedder
from storage.kernel.errors import InputError
from tasks.documents._chunk import Span, chunk
from tasks.documents._read import Parsed


@dataclass(frozen=True)
class Chunking:
    """How documents are cut: at most ``size`` characters, ``overlap`` shared when cut."""

    size: int
    overlap: int

    def check(self) -> Chunking:
        if not 100 <= self.size <= 20_000:
            raise InputError(f"chunk size {self.size} out of range 100..20000 characters")
        if not 0 <= self.overlap < self.size // 2:
            raise InputError(
                f"overlap {self.overlap} must be at least 0 and under half the chunk size"
            )
        return self


@dataclass(frozen=True)
class Incoming:
    """One document's bytes on their way into the store, whichever door they came by: where
    they go (namespace, URI), the name whose extension picks the reader, the tag, and a
    title that overrides the reader's."""

    namespace: str
    uri: str
    path: str
    data: bytes
    tag: str | None
    title: str | None = None

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def unchanged(existing: store.StoredDocument | None, digest: str, chunking: Chunking) -> bool:
    """Whether the stored document has these bytes, cut this way: nothing to write."""
    if existing is None:
        return False
    return (existing.content_hash, existing.chunk_size, existing.overlap) == (
        digest,
        chunking.size,
        chunking.overlap,
    )


@dataclass(frozen=True)
class Rows:
    """What a document's write needs: the document and its embedded chunks."""

    document: store.NewDocument
    chunks: list[store.NewChunk]


def document_rows(
    incoming: Incoming, parsed: Parsed, chunking: Chunking, embedder: Embedder, at: datetime,
    *, embed_batch: int = 256, queue_item: int | None = None,
) -> Rows:  # fmt: skip
    """The rows of a parsed document: chunked on structure, each chunk embedded."""
    new = store.NewDocument(
        incoming.namespace, incoming.uri, incoming.title or parsed.title, incoming.tag,
        parsed.format, incoming.digest, len(incoming.data), parsed.text, chunking.size,
        chunking.overlap, at, queue_item,
    )  # fmt: skip
    spans = chunk(parsed.text, chunking.size, chunking.overlap)
    return Rows(new, embedded(embedder, spans, embed_batch))


def write_rows(
    session: Session, rows: Rows, existing: int | None, model: str
) -> tuple[int, int] | None:
    """Write a document and replace its chunks in the caller's transaction: its id and how
    many chunks, or None when it was not written (``storage.documents.save_document``)."""
    doc_id = store.save_document(session, rows.document, existing)
    if doc_id is None:
        return None
    new = rows.document
    return doc_id, store.replace_chunks(session, doc_id, new.namespace, rows.chunks, model, new.at)


def embedded(embedder: Embedder, spans: Sequence[Span], batch: int = 256) -> list[store.NewChunk]:
    """The spans as chunks with their vectors (heading path and text embedded together)."""
    out: list[store.NewChunk] = []
    for part in _batches(spans, batch):
        vectors = embedder.embed([embed_text(s.heading, s.text) for s in part])
        for span, vector in zip(part, vectors, strict=True):
            digest = hashlib.sha256(span.text.encode("utf-8")).hexdigest()
            ordinal = len(out)
            out.append(
                store.NewChunk(
                    ordinal, span.heading, span.text, span.start, span.end, digest, vector
                )
            )
    return out


def embed_text(heading: str, text: str) -> str:
    """What a chunk's vector is made from: its heading path, then its text."""
    return f"{heading}\n{text}" if heading else text


def _batches(spans: Sequence[Span], size: int) -> Iterator[Sequence[Span]]:
    for start in range(0, len(spans), size):
        yield spans[start : start + size]
