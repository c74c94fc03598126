"""Knowledge documents: read Markdown, text, HTML and PDF, chunk on structure, embed, store.

``ingest_documents`` is what ``archivist docs ingest`` runs; ``rebuild``, ``purge_documents``,
``list_documents`` and ``feedback`` the other ``docs`` commands; ``add_uploaded`` what a
drainer runs for a queued ``ADD_DOCUMENT`` (the HTTP API's and MCP's documents). Both doors
take the same steps (``_write``); readers live in ``_read``, the chunker in ``_chunk``.
"""

from tasks.documents._chunk import Span, chunk
from tasks.documents._ingest import (
    DocsReport,
    IngestRequest,
    check_names,
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
from tasks.documents._upload import add_uploaded
from tasks.documents._write import Chunking, embed_text, embedded

__all__ = [
    "SKIP_REASONS",
    "Chunking",
    "DocsReport",
    "IngestRequest",
    "Parsed",
    "RebuildOutcome",
    "Skip",
    "Span",
    "add_uploaded",
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
