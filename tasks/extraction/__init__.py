"""Extraction: turn a session state into an episode, memories and (for sub-agents) a task card."""

from tasks.extraction._chunks import CHUNK_CHARS, OVERLAP_CHARS, chunk_text
from tasks.extraction._command import CommandExtractor
from tasks.extraction._factory import make_extractor, summary_embedder
from tasks.extraction._heuristic import HeuristicExtractor
from tasks.extraction._llm import LLMExtractor
from tasks.extraction._none import NoneExtractor
from tasks.extraction._person import as_note, attributed, display_name
from tasks.extraction._summary import BUDGET, centrality
from tasks.extraction._text import names
from tasks.extraction._types import (
    EpisodeDraft,
    Extraction,
    Extractor,
    MemoryDraft,
    OpenThread,
    Outcome,
    TaskCard,
)

__all__ = [
    "BUDGET",
    "CHUNK_CHARS",
    "CommandExtractor",
    "EpisodeDraft",
    "Extraction",
    "Extractor",
    "HeuristicExtractor",
    "LLMExtractor",
    "MemoryDraft",
    "NoneExtractor",
    "OVERLAP_CHARS",
    "OpenThread",
    "Outcome",
    "TaskCard",
    "as_note",
    "attributed",
    "centrality",
    "chunk_text",
    "display_name",
    "make_extractor",
    "names",
    "summary_embedder",
]
