"""The HTTP API's request bodies (unknown fields are refused, as everywhere in Archivist),
and the search's answer as its documentation shows it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from storage.kernel.inputs import Instant, Moment, StorableText, TokenBudget
from storage.queue import AddDocument
from storage.retrieval import TimeRange

TimeRangeName = Literal["today", "week", "month", "recent", "all"]
# When a remembered memory happened: one type for the API's body and MCP's remember.
OccurredAt = Moment


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


class SearchRequest(_Body):
    query: StorableText = Field(
        description="what to look for, in the user's words", max_length=10_000
    )
    limit: int = Field(10, description="how many memories (up to ARCHIVIST_RETRIEVAL__MAX_LIMIT)")
    time_range: TimeRangeName | None = Field(
        None, description="a named window; or give start and end"
    )
    start: Instant | None = Field(None, description="from this moment (with end)")
    end: Instant | None = Field(None, description="before this moment (with start)")
    kinds: list[str] | None = Field(
        None, max_length=20, description="only these kinds (turn, fact, episode, ...)"
    )
    include_archived: bool = Field(False, description="search the cold tier too (slower)")
    budget_tokens: TokenBudget | None = Field(
        None,
        description="fit the best passages into this many tokens (the local model's "
        "tokenizer), each once, from a whole pool of hits (limit does not apply); the answer "
        "then says tokens_used and carries the context text",
    )

    @model_validator(mode="after")
    def _one_range(self) -> SearchRequest:
        if (self.start is None) != (self.end is None):
            raise ValueError("give both start and end, or neither")
        if self.start is not None and self.time_range is not None:
            raise ValueError("give time_range or start and end, not both")
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError("start is after end")
        return self

    def resolved_time_range(self) -> TimeRange | None:
        if self.start is not None and self.end is not None:
            return (self.start, self.end)
        return self.time_range


class PrimeRequest(_Body):
    message: StorableText | None = Field(
        None, max_length=10_000, description="the conversation's first message, if any"
    )
    budget_tokens: TokenBudget | None = Field(
        None,
        description="keep the formatted text within this many tokens (the local model's "
        "tokenizer): facts first, then conversations, open threads and names, while they fit",
    )


class RememberRequest(_Body):
    content: StorableText = Field(description="the memory, as a sentence", max_length=20_000)
    kind: Literal["note", "fact", "preference", "goal", "decision"] = "note"
    importance: float | None = Field(None, ge=0, le=1)
    occurred_at: OccurredAt | None = Field(
        None,
        description="when it happened (default now): ISO 8601 with a UTC offset, from "
        "1900-01-01 to a day from now",
    )
    idempotency_key: StorableText | None = Field(
        None, max_length=200, description="the same key again is not queued twice"
    )


class DocumentRequest(AddDocument):
    """A document to add: the queue's ``ADD_DOCUMENT`` payload (its fields and rules are the
    queue's door), and an idempotency key."""

    idempotency_key: StorableText | None = Field(
        None, max_length=200, description="the same key again is not queued twice"
    )


class DocHit(BaseModel):
    """Where a document chunk's hit comes from: ``text[char_start:char_end]`` of the
    document is its content."""

    document_id: int
    chunk_id: int
    uri: str
    title: str
    tag: str | None
    heading: str
    char_start: int
    char_end: int


class SearchHit(BaseModel):
    """One hit, headed by the label to cite it by (``[Memory 1]``, ``[Doc 1]``)."""

    label: str
    memory_id: int | None = Field(description="null for a document chunk")
    kind: str
    passage: str = Field(description="the part of the memory that answers the query")
    content: str = Field(description="the whole memory")
    score: float
    low_confidence: bool = Field(description="shares no word with the query, low cosine")
    tier: str
    session_id: str | None
    message_ids: list[str]
    occurred_at: datetime
    created_at: datetime
    sources: list[int] = Field(description="a long-term entry's memories")
    doc: DocHit | None = Field(None, description="a document chunk's provenance")


class SearchAnswer(BaseModel):
    """A search's hits, best first, and the ``Sources:`` line to close an answer with. The
    endpoint's answer is rendered as it is (``serving._views.search_view``): this model
    documents it and is never run on it."""

    namespace: str
    hits: list[SearchHit]
    sources: str = Field(description='"" without hits')
    context: str | None = Field(
        None, description="with budget_tokens: the labelled passages and the Sources: line"
    )
    budget_tokens: int | None = Field(None, description="the budget asked for")
    tokens_used: int | None = Field(
        None, description="with budget_tokens: the context's tokens (the local tokenizer)"
    )
    left_out: int | None = Field(
        None, description="with budget_tokens: hits that did not fit or repeated a kept one"
    )
