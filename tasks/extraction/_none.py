"""Extractor for ``mode = none``: no model and no reading of the text beyond the turns.

The episode is one plain line of counts, names and times; the memories are the heuristic's
turns, so every message stays findable by search.
"""

from __future__ import annotations

from storage.kernel.records import SessionState
from tasks.extraction._heuristic import HeuristicExtractor
from tasks.extraction._types import EpisodeDraft, Extraction, Extractor

__all__ = ["NoneExtractor"]


def _names(speakers: list[str]) -> str:
    if len(speakers) == 1:
        return f"by {speakers[0]}"
    return f"between {', '.join(speakers[:-1])} and {speakers[-1]}"


def plain_summary(state: SessionState) -> str:
    """``N messages between A and B from T1 to T2`` (speakers in order of appearance)."""
    messages = state.messages
    speakers = list(dict.fromkeys(m.speaker for m in messages))
    count = f"{len(messages)} message{'s' if len(messages) != 1 else ''}"
    first = messages[0].timestamp.isoformat(timespec="minutes")
    last = messages[-1].timestamp.isoformat(timespec="minutes")
    return f"{count} {_names(speakers)} from {first} to {last}"


class NoneExtractor(Extractor):
    """No summary model at all: a plain episode line and the turn memories."""

    def __init__(self) -> None:
        self._turns = HeuristicExtractor()

    @property
    def name(self) -> str:
        """Identifier recorded with every memory this extractor writes."""
        return "none"

    def extract(self, state: SessionState) -> Extraction:
        """A plain episode (importance 0.5, no vehemence) and the session's turns."""
        turns = [m for m in self._turns.extract(state).memories if m.kind == "turn"]
        episode = EpisodeDraft(
            summary=plain_summary(state),
            topics=(),
            entities=(),
            user_state={},
            outcomes=(),
            open_threads=(),
            importance=0.5,
            vehemence=0.0,
            urgency=0.0,
            sentiment=0.0,
            risk=0.0,
        )
        return Extraction(episode=episode, memories=tuple(turns))
