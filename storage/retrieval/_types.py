"""The values retrieval returns: hits with their factor breakdown, and a priming."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal

from storage.retrieval._timeframe import TimeWindow

TimeRangeName = Literal["today", "week", "month", "recent", "all"]
TimeRange = TimeRangeName | tuple[datetime, datetime]
# The kind of a hit that is a chunk of a knowledge document, not a memory.
DOC_KIND = "doc"


@dataclass(frozen=True)
class SearchOptions:
    """What narrows or reweighs a search beyond its namespace, query and size: a time range
    (a name, or ``(start, end)``), kinds, custom weights, and the cold tier too."""

    time_range: TimeRange | None = None
    kinds: Sequence[str] | None = None
    weights: Mapping[str, float] | None = None
    include_archived: bool = False


@dataclass(frozen=True)
class DocSource:
    """Where a document chunk comes from: the document, the chunk, and its span of the
    document's stored text (``text[char_start:char_end]`` is the hit's content)."""

    document_id: int
    chunk_id: int
    uri: str
    title: str
    tag: str | None
    heading: str
    char_start: int
    char_end: int


@dataclass(frozen=True)
class Hit:
    """One retrieved memory, its score, why it scored so, and where it came from.

    A chunk of a knowledge document is a hit of kind ``"doc"``: it is no memory, so its
    ``memory_id`` is None (a memory call given the chunk's id would act on another row);
    ``doc`` says which document, chunk (``doc.chunk_id``) and span it is, ``tier`` is
    ``"document"`` and ``occurred_at`` the time its text was ingested.
    """

    memory_id: int | None
    namespace: str
    kind: str
    content: str
    score: float
    factors: dict[str, float]
    weights: dict[str, float]
    occurred_at: datetime
    created_at: datetime
    session_id: str | None
    message_ids: tuple[str, ...]
    tier: str
    # A long-term entry's source memories (the facts merged into its MEMORY.md line).
    sources: tuple[int, ...] = ()
    # Shares no word with the query and is not close in meaning either (cosine under the
    # embedder's ``min_cosine``): ranked, but likely not what was asked for.
    low_confidence: bool = False
    doc: DocSource | None = None
    # The time window the question named ("last week"), whose memories the ``window``
    # factor lifts; None if it named none.
    window: TimeWindow | None = None
    # For a question about now: the newer memory that restates this one, which this hit
    # was placed right after (``supersede``).
    restated_by: int | None = None
    # The part of ``content`` that answers the query (``storage.retrieval.explain._passage``); ""
    # where no query chose one (priming's facts without a first message).
    passage: str = ""

    @property
    def shown(self) -> str:
        """What to show of the hit: its passage, else its whole memory."""
        return self.passage or self.content

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Hit:
        """``Hit(**values)`` given a dict of every field, without the frozen dataclass's
        ``__init__``, which sets each of its twenty fields through ``object.__setattr__``:
        the dict becomes the hit's own (not copied: the caller's, made for it, no longer
        changed): 0.7 us instead of 3.4, for the forty-odd hits ranking builds a search, and
        ranking's dict written out in field order gathers no keyword arguments (a hit 1.2 us
        instead of 1.7 from keywords). A name missing or unknown raises ``TypeError`` as
        ``__init__`` would; the values are taken as given, as there."""
        if values.keys() != _HIT_FIELDS:
            wrong = sorted(values.keys() ^ _HIT_FIELDS)
            raise TypeError(f"a hit is made of all its fields, each once: {wrong}")
        hit = object.__new__(cls)
        object.__setattr__(hit, "__dict__", values)
        return hit

    def changed(self, **changes: Any) -> Hit:
        """The hit with ``changes`` (fields by name), as ``dataclasses.replace`` makes it, but
        without calling ``__init__`` again: a hit checks nothing there, and the copy takes
        1.1 us instead of 7.5 (a search makes twenty-odd: its passages, its public ids)."""
        if not changes.keys() <= _HIT_FIELDS:
            raise TypeError(f"a hit has no field {sorted(changes.keys() - _HIT_FIELDS)}")
        copy = object.__new__(Hit)
        copy.__dict__.update(self.__dict__, **changes)
        return copy

    @property
    def ref(self) -> tuple[str, int]:
        """What the hit is, as ``("memory", id)`` or ``("doc", chunk id)``."""
        if self.doc is not None:
            return "doc", self.doc.chunk_id
        assert self.memory_id is not None, "a memory hit has its memory's id"
        return "memory", self.memory_id

    def explain(self) -> str:
        """The score from its factors (``scoring.composite``), then the unweighted parts,
        the time window the question named, and the newer memory this one was placed after.
        """
        used = [
            f"{w:g}*{n}({self.factors[n]:.3f})"
            for n, w in self.weights.items()
            if w and n in self.factors
        ]
        rest = [f"{n}={v:.3f}" for n, v in self.factors.items() if not self.weights.get(n)]
        notes = [f"window {self.window}"] if self.window is not None else []
        if self.restated_by is not None:
            notes.append(f"placed after newer memory {self.restated_by}, which restates it")
        flag = "  (low confidence)" if self.low_confidence else ""
        return (
            f"{self.score:.3f} from "
            + " + ".join(used)
            + (f"  [{', '.join(rest)}]" if rest else "")
            + "".join(f"; {note}" for note in notes)
        ) + flag


_HIT_FIELDS = frozenset(f.name for f in fields(Hit))


@dataclass(frozen=True)
class PrimedEpisode:
    """A recent conversation worth recalling."""

    session_id: str
    summary: str
    topics: tuple[str, ...]
    ended_at: datetime
    salience: float
    # The summary's part that answers the first message (``storage.retrieval.explain._passage``);
    # "" without one: the summary is shown whole.
    passage: str = ""

    @property
    def shown(self) -> str:
        return self.passage or self.summary


@dataclass(frozen=True)
class PrimedThread:
    """Something left open in an earlier conversation."""

    session_id: str
    topic: str
    status: str
    context: str
    since: datetime


@dataclass(frozen=True)
class Priming:
    """What to remember at the start of a conversation, and the same as readable text."""

    namespace: str
    episodes: tuple[PrimedEpisode, ...]
    open_threads: tuple[PrimedThread, ...]
    facts: tuple[Hit, ...]
    entities: tuple[str, ...]
    formatted: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    # With a token budget: the budget, and the tokens ``formatted`` takes (the local model's
    # tokenizer); the parts above are then those that fit.
    budget_tokens: int | None = None
    tokens_used: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "episodes": [e.__dict__ for e in self.episodes],
            "open_threads": [t.__dict__ for t in self.open_threads],
            "facts": [{"memory_id": h.memory_id, "content": h.content} for h in self.facts],
            "entities": list(self.entities),
            "formatted": self.formatted,
            "budget_tokens": self.budget_tokens,
            "tokens_used": self.tokens_used,
        }
