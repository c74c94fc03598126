"""Retrieval for assistants: composite-scored hybrid search and conversation priming.

Imports no Prefect and nothing from ``tasks``, so an assistant can
``from storage.retrieval import Retriever`` alone. ``Retriever`` lives in ``_search``; the
candidates, ranking, priming, cold-tier search and SQL are its private modules, with what a
question says about time (``_timeframe``) and which candidates restate which (``_restated``);
``_citations`` labels hits ``[Memory n]`` and ``[Doc n]`` with a closing ``Sources:`` line.
"""

from storage.kernel.errors import RetrievalError
from storage.retrieval._citations import (
    Citation,
    CitationBook,
    cite,
    render_citations,
    source_entries,
    sources_line,
)
from storage.retrieval._search import Retriever
from storage.retrieval._types import DOC_KIND, DocSource, Hit, Priming, SearchOptions, TimeRange

__all__ = [
    "Citation",
    "CitationBook",
    "DOC_KIND",
    "DocSource",
    "Hit",
    "Priming",
    "RetrievalError",
    "Retriever",
    "SearchOptions",
    "TimeRange",
    "cite",
    "render_citations",
    "source_entries",
    "sources_line",
]
