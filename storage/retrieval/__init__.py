"""Retrieval for assistants: composite-scored hybrid search and conversation priming.

Imports no Prefect and nothing from ``tasks``, so an assistant can
``from storage.retrieval import Retriever`` alone. ``Retriever`` (``_search``) walks a query
down through its steps, one package each:

1. ``candidates``: the request checked, the dense and lexical candidates of memories and
   document chunks (one statement per table), and the cold tier's;
2. and 3. ``rank``: relevance fused with the other factors into one score, restatements
   and the turns next to the best hits, one place per source;
4. ``explain``: each hit's passage (the part of its memory that answers), labels and the
   closing ``Sources:`` line, and the best passages within a token budget.

Beside them: what a question says about time (``_timeframe``), the values a search returns
(``_types``) and priming (``_priming``), which runs its own short walk over the same steps.
"""

from storage.kernel.errors import RetrievalError
from storage.retrieval._search import Retriever
from storage.retrieval._timeframe import TimeWindow, asks_about_now, read_time, time_window
from storage.retrieval._types import DOC_KIND, DocSource, Hit, Priming, SearchOptions, TimeRange
from storage.retrieval.candidates import KINDS, ArchiveReader
from storage.retrieval.explain import (
    Citation,
    CitationBook,
    Context,
    cite,
    render_citations,
    search_within,
    source_entries,
    sources_line,
)

__all__ = [
    "ArchiveReader",
    "Citation",
    "CitationBook",
    "Context",
    "DOC_KIND",
    "DocSource",
    "Hit",
    "KINDS",
    "Priming",
    "RetrievalError",
    "Retriever",
    "SearchOptions",
    "TimeRange",
    "TimeWindow",
    "asks_about_now",
    "cite",
    "read_time",
    "render_citations",
    "search_within",
    "source_entries",
    "sources_line",
    "time_window",
]
