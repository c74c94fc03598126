"""Knowledge documents: read Markdown, text, HTML and PDF, chunk on structure, embed, store.

``ingest_documents`` is what ``archivist docs ingest`` runs; ``rebuild``, ``purge_documents``,
``list_documents`` and ``feedback`` the other ``docs`` commands. Readers live in ``_read``,
the chunker in ``_chunk``.
"""

from tasks.documents._chunk import Span, chunk
from tasks.documents._ingest import (
    Chunking,
    DocsReport,
    IngestRequest,
    check_names,
    embed_text,
    embedded,
    ingest_documents,
)
from tasks.documents._manage import (
    RebuildOutcome,
    feedback,
    list_documents,
    purge_documents,
    rebuild,
)
from tasks.documents._read import SKIP_REASONS, Parsed, Skip, parse

__all__ = [
    "SKIP_REASONS",
    "Chunking",
    "DocsReport",
    "IngestRequest",
    "Parsed",
    "RebuildOutcome",
    "Skip",
    "Span",
    "check_names",
    "chunk",
    "embed_text",
    "embedded",
    "feedback",
    "ingest_documents",
    "list_documents",
    "parse",
    "purge_documents",
    "rebuild",
]
