"""Step 4 of a search: what an assistant reads. Each hit's passage, the part of its
memory that answers (``_passage``, ``_sentences``), labels and the closing
``Sources:`` line (``_citations``), and the best passages within a token budget
(``_budget``).
"""

from storage.retrieval.explain._budget import (
    Context,
    Within,
    checked_budget,
    fit,
    record_hits,
    search_within,
)
from storage.retrieval.explain._citations import (
    Citation,
    CitationBook,
    cite,
    render_citations,
    source_entries,
    sources_line,
)
from storage.retrieval.explain._passage import GAP, PASSAGE_CHARS, Question, passage, with_passages

__all__ = [
    "checked_budget",
    "Citation",
    "CitationBook",
    "cite",
    "Context",
    "fit",
    "GAP",
    "passage",
    "PASSAGE_CHARS",
    "Question",
    "record_hits",
    "render_citations",
    "search_within",
    "source_entries",
    "sources_line",
    "with_passages",
    "Within",
]
