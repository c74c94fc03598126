"""Extraction: turn a session state into an episode, memories and (for sub-agents) a task card."""

from tasks.extraction.types import (
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
    "MemoryDraft",
    "OpenThread",
    "Outcome",
    "TaskCard",
]
