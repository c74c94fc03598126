"""Scores of the heuristic extractor: urgency, sentiment, risk, vehemence and importance.

Every score is read from the lexicons and rounded to four places, so equal input always
gives equal output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tasks.extraction import _lexicon as lexicon
from tasks.extraction._types import MemoryDraft, MemoryKind, OpenThread, Outcome


def _build_cues() -> dict[str, tuple[float, float, float, int]]:
    """One lookup per token: (urgency, sentiment, risk, importance marker)."""
    words = (
        set(lexicon.URGENCY) | set(lexicon.SENTIMENT) | lexicon.RISK | lexicon.IMPORTANCE_MARKERS
    )
    return {
        word: (
            lexicon.URGENCY.get(word, 0.0),
            lexicon.SENTIMENT.get(word, 0.0),
            0.5 if word in lexicon.RISK else 0.0,
            int(word in lexicon.IMPORTANCE_MARKERS),
        )
        for word in sorted(words)
    }


_CUES = _build_cues()
_CUE_WORDS = frozenset(_CUES)

_BASE_IMPORTANCE: dict[MemoryKind, float] = {
    "turn": 0.15,
    "fact": 0.5,
    "preference": 0.55,
    "decision": 0.6,
}


@dataclass(frozen=True, slots=True)
class Cues:
    """Emotional and risk reading of one text, or of a whole episode."""

    urgency: float
    sentiment: float
    risk: float
    markers: int
    vehemence: float


CALM = Cues(0.0, 0.0, 0.0, 0, 0.0)


def unit(value: float) -> float:
    """Value clamped to [0, 1] and rounded to four places."""
    return round(min(1.0, max(0.0, value)), 4)


def make_cues(urgency: float, sentiment: float, risk: float, markers: int) -> Cues:
    """Clamped cues, with vehemence derived from urgency, sentiment strength and risk."""
    urgency, risk = unit(urgency), unit(risk)
    sentiment = round(max(-1.0, min(1.0, sentiment)), 4)
    vehemence = unit(0.5 * urgency + 0.3 * abs(sentiment) + 0.2 * risk)
    return Cues(urgency, sentiment, risk, markers, vehemence)


def score(tokens: Sequence[str], text: str) -> Cues:
    """Urgency, sentiment, risk and importance markers of one text from the lexicons."""
    hits = _CUE_WORDS.intersection(tokens)
    bangs = text.count("!") + text.count("！")
    if not hits and not bangs:
        return CALM
    urgency = 0.1 * min(bangs, 3)
    sentiment = risk = 0.0
    markers = 0
    for position in [i for i, token in enumerate(tokens) if token in hits]:
        cue = _CUES[tokens[position]]
        prev = tokens[position - 1] if position else ""
        negated = prev in lexicon.NEGATIONS
        urgency += 0.0 if negated else cue[0]
        sentiment += -cue[1] if negated else cue[1] * (1.5 if prev in lexicon.INTENSIFIERS else 1.0)
        risk += cue[2]
        markers += cue[3]
    # squash so that one strong word reads as clearly, not maximally, emotional
    return make_cues(urgency, sentiment / (abs(sentiment) + 1.0), risk, markers)


def _blend(values: Sequence[float]) -> float:
    """Mostly the peak, partly the mean: one alarmed message should count."""
    if not values:
        return 0.0
    peak = max(values, key=abs)
    return round(0.6 * peak + 0.4 * sum(values) / len(values), 4)


def episode_cues(spoken: Sequence[Cues], users: Sequence[Cues]) -> Cues:
    """Cues of a session: the user's voice (else everyone's), risk from everyone."""
    voice = users or spoken
    return make_cues(
        _blend([c.urgency for c in voice]),
        _blend([c.sentiment for c in voice]),
        _blend([c.risk for c in spoken]),
        sum(c.markers for c in voice),
    )


def episode_importance(
    cues: Cues,
    outcomes: Sequence[Outcome],
    threads: Sequence[OpenThread],
    memories: Sequence[MemoryDraft],
) -> float:
    """How much a session matters: outcomes, open threads, markers, personal facts, heat."""
    personal = any(m.kind in ("fact", "preference") for m in memories)
    total = 0.3 + (0.15 if outcomes else 0.0) + (0.1 if threads else 0.0)
    total += min(0.2, 0.05 * cues.markers) + (0.15 if personal else 0.0)
    return unit(total + 0.1 * cues.vehemence)


def memory_importance(kind: MemoryKind, cues: Cues) -> float:
    """Base weight of the kind, raised by importance markers and vehemence."""
    raw = _BASE_IMPORTANCE[kind] + min(0.2, 0.1 * cues.markers) + 0.25 * cues.vehemence
    # a turn is raw material: it stays below every distilled fact, preference or decision
    return unit(min(raw, 0.45) if kind == "turn" else raw)
