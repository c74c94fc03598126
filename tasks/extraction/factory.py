"""Build the extractor the settings name."""

from __future__ import annotations

from storage.config import Settings
from tasks.extraction.heuristic import HeuristicExtractor
from tasks.extraction.types import Extractor


def make_extractor(settings: Settings) -> Extractor:
    """The configured extractor (only ``heuristic`` exists so far)."""
    return HeuristicExtractor()
