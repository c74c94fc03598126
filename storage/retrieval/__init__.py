"""Retrieval for assistants: composite-scored hybrid search and conversation priming.

Imports no Prefect and nothing from ``tasks``, so an assistant can
``from storage.retrieval import Retriever`` alone. ``Retriever`` lives in ``_search``; the
candidates, ranking, priming, cold-tier search and SQL are its private modules, with what a
question says about time (``_timeframe``) and which candidates restate which (``_restated``);
``_citations`` labels hits ``[Memory n]`` and ``[Doc n]`` with a closing ``Sources:`` line.
Each hit carries the part of its memory that answers the query (``passage``, public:
``Hit.passage``), and ``_budget`` fits the best passages into a token budget (``Context``).
"""

from storage.kernel.errors import RetrievalError
from storage.retrieval._archived import ArchiveReader
from storage.retrieval._budget import Context, Within, fit, search_within
from storage.retrieval._candidates import Request, neighbours, search_params
from storage.retrieval._citations import (
    Citation,
    CitationBook,
    cite,
    render_citations,
    source_entries,
    sources_line,
)
from storage.retrieval._documents import TERM_STATS as CHUNK_TERM_STATS
from storage.retrieval._inputs import DF_CAP, KINDS, lexical_params, scoped_term, tsquery_term
from storage.retrieval._ranking import (
    after_newer,
    one_per_source,
    ranked,
    relevance_parts,
    weights_for,
)
from storage.retrieval._restated import candidate_vectors, restatements
from storage.retrieval._search import Retriever
from storage.retrieval._sql import CANDIDATES, TERM_STATS
from storage.retrieval._stats import StatsCache
from storage.retrieval._timeframe import TimeWindow, asks_about_now, read_time, time_window
from storage.retrieval._types import DOC_KIND, DocSource, Hit, Priming, SearchOptions, TimeRange
from storage.retrieval.passage import Question, passage, with_passages

__all__ = [
    "ArchiveReader",
    "CANDIDATES",
    "CHUNK_TERM_STATS",
    "Citation",
    "CitationBook",
    "Context",
    "DF_CAP",
    "DOC_KIND",
    "DocSource",
    "Hit",
    "KINDS",
    "Priming",
    "Question",
    "Request",
    "RetrievalError",
    "Retriever",
    "SearchOptions",
    "StatsCache",
    "TERM_STATS",
    "TimeRange",
    "TimeWindow",
    "Within",
    "after_newer",
    "asks_about_now",
    "candidate_vectors",
    "cite",
    "fit",
    "lexical_params",
    "neighbours",
    "one_per_source",
    "passage",
    "ranked",
    "read_time",
    "relevance_parts",
    "render_citations",
    "restatements",
    "scoped_term",
    "search_params",
    "search_within",
    "source_entries",
    "sources_line",
    "time_window",
    "tsquery_term",
    "weights_for",
    "with_passages",
]
