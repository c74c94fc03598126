"""What an extractor returns, and the protocol every extractor implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from storage.kernel.records import SessionState

MemoryKind = Literal["fact", "preference", "decision", "turn"]


@dataclass(frozen=True)
class Outcome:
    """A decision, agreement or action item reached in the conversation."""

    type: Literal["decision", "agreement", "action"]
    content: str
    message_ids: tuple[str, ...]


@dataclass(frozen=True)
class OpenThread:
    """Something left unresolved: a question, a promise, a follow-up."""

    topic: str
    status: Literal["unanswered_question", "promised", "follow_up"]
    context: str
    message_ids: tuple[str, ...]


@dataclass(frozen=True)
class EpisodeDraft:
    """The durable summary of one session state (seed 003's conversation episode)."""

    summary: str
    topics: tuple[str, ...]
    entities: tuple[str, ...]
    user_state: dict[str, str]
    outcomes: tuple[Outcome, ...]
    open_threads: tuple[OpenThread, ...]
    importance: float
    vehemence: float
    urgency: float
    sentiment: float
    risk: float


@dataclass(frozen=True)
class MemoryDraft:
    """One fine-grained memory, linked to the messages it came from."""

    kind: MemoryKind
    content: str
    message_ids: tuple[str, ...]
    occurred_at: datetime
    importance: float
    vehemence: float


@dataclass(frozen=True)
class TaskCard:
    """Result-only card of a sub-agent session (seed 004)."""

    goal: str
    boundary: tuple[str, ...]
    acceptance: tuple[str, ...]
    actions: tuple[str, ...]
    artifacts: tuple[str, ...]
    status: Literal["done", "blocked", "in_progress", "failed"]
    next: tuple[str, ...]


@dataclass(frozen=True)
class Extraction:
    """Everything derived from one session state."""

    episode: EpisodeDraft
    memories: tuple[MemoryDraft, ...]
    task_card: TaskCard | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    # Values replaced per category in what was sent out (``storage.redaction``); counts only.
    redactions: dict[str, int] = field(default_factory=dict)


class Extractor(Protocol):
    """Turns one session state into an extraction; must be deterministic for a given input.

    An extractor that subclasses it explicitly gets `extract_many` as `extract` of each
    state, one at a time; one that can do better with several states at once (the
    heuristic one embeds their summaries' sentences in one call) defines its own."""

    @property
    def name(self) -> str: ...

    def extract(self, state: SessionState) -> Extraction: ...

    def extract_many(self, states: Sequence[SessionState]) -> list[Extraction]:
        """``extract`` of each state, in order (a sync extracts its sessions in parts)."""
        return [self.extract(state) for state in states]
