"""Extraction: turn a session state into an episode, memories and (for sub-agents) a task card."""

from tasks.extraction._chunks import CHUNK_CHARS, OVERLAP_CHARS, chunk_text
from tasks.extraction._command import CommandExtractor
from tasks.extraction._factory import make_extractor
from tasks.extraction._heuristic import HeuristicExtractor
from tasks.extraction._llm import LLMExtractor
from tasks.extraction._none import NoneExtractor
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
    "chunk_text",
    "make_extractor",
]
