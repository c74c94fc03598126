"""What the sync's steps pass each other: the plan, the run's context, derived rows, counts."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

import numpy as np

from storage.embedding import Embedder
from storage.kernel.records import SessionState
from storage.processed import Candidate
from tasks.extraction import Extraction, Extractor


@dataclass(frozen=True)
class SyncPlan:
    """Which sessions in the window need work, and why the others do not."""

    as_of: datetime
    window_start: datetime
    seen: int
    to_process: tuple[Candidate, ...]
    skipped_few_user_messages: tuple[str, ...]
    unchanged: tuple[str, ...]
    later_state: tuple[str, ...]
    still_active: tuple[str, ...] = ()
    skipped_no_user_message: tuple[str, ...] = ()  # and too few assistant messages with text


@dataclass(frozen=True)
class SyncOptions:
    """Which sessions a run takes up: those with a message in the last ``window_hours``,
    with ``min_user_messages`` or more, quiet for ``idle_minutes`` (None: however recent);
    transcripts loaded from ``transcripts_url`` first; and whether a run that finds nothing
    to do still publishes its report (``publish_idle``)."""

    window_hours: float
    min_user_messages: int
    idle_minutes: float | None = None
    transcripts_url: str | None = None
    publish_idle: bool = True

    def recorded(self) -> dict[str, object]:
        """The options as a run's parameters."""
        return {
            "window_hours": self.window_hours,
            "min_user_messages": self.min_user_messages,
            "idle_minutes": self.idle_minutes,
            "transcripts_url": self.transcripts_url,
        }


@dataclass(frozen=True)
class SyncContext:
    """What every batch of one run needs."""

    extractor: Extractor
    embedder: Embedder
    as_of: datetime
    tz: tzinfo
    run_id: uuid.UUID | None
    dry_run: bool = False
    half_life_days: float | None = None  # salience of back-filled memories starts decayed
    turn_context: bool = False  # turns embedded with their context (storage.embedding)


@dataclass
class BatchOutcome:
    """Counts of one batch (or, merged, of a whole run)."""

    sessions: int = 0
    memories_added: int = 0
    memories_removed: int = 0
    memories_kept: int = 0
    episodes: int = 0
    task_cards: int = 0
    blocks_queued: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    extractor_fallbacks: int = 0
    messages_empty: int = 0  # no text, or white space only: nothing to index
    messages_too_short: int = 0  # user or assistant text too short for a turn memory
    redactions: dict[str, int] = field(default_factory=dict)  # per category, sent to a model
    sessions_refused: int = 0  # the database refused their rows: skipped, tried again next run

    def merge(self, other: BatchOutcome) -> None:
        for name, value in other.__dict__.items():
            if isinstance(value, dict):
                setattr(self, name, _summed(getattr(self, name), value))
            else:
                setattr(self, name, getattr(self, name) + value)


def _summed(left: dict[str, int], right: dict[str, int]) -> dict[str, int]:
    return {key: left.get(key, 0) + right.get(key, 0) for key in sorted(left.keys() | right)}


@dataclass(frozen=True)
class MemoryRow:
    """One memory derived from a session state, before it has an id or a vector."""

    kind: str
    content: str
    message_ids: tuple[str, ...]
    occurred_at: datetime
    importance: float
    vehemence: float

    @property
    def key(self) -> str:
        raw_key = "\x1f".join((self.kind, self.content, ",".join(self.message_ids)))
        return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


@dataclass
class Derived:
    """A session state, what the extractor made of it, and its memory rows (episode first)."""

    state: SessionState
    extraction: Extraction
    rows: list[MemoryRow] = field(default_factory=list)


@dataclass
class PreparedBatch:
    """A batch extracted and embedded, ready to be written in one short transaction."""

    derived: list[Derived]
    vectors: dict[tuple[str, str, str], np.ndarray]
