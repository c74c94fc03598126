"""Extraction: turn a session state into an episode, memories and (for sub-agents) a task card."""

from tasks.extraction._factory import make_extractor
from tasks.extraction._heuristic import HeuristicExtractor
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
    "EpisodeDraft",
    "Extraction",
    "Extractor",
    "HeuristicExtractor",
    "MemoryDraft",
    "OpenThread",
    "Outcome",
    "TaskCard",
    "make_extractor",
]
