"""The JSON reply a model or a local program gives for one session, and its mapping.

The llm and command extractors share this one parser: ``parse_reply`` turns raw text into a
validated ``Reply`` (or raises ``DataQualityError``), and ``to_extraction`` maps it onto an
``Extraction``, keeping the heuristic's turn memories so every message stays findable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from storage.kernel.errors import DataQualityError
from storage.kernel.records import SessionState
from tasks.extraction._scoring import make_cues, unit
from tasks.extraction._types import EpisodeDraft, Extraction, MemoryDraft, OpenThread, Outcome

__all__ = ["Reply", "parse_reply", "to_extraction"]

_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def _ids(value: Any) -> Any:
    """Message ids as strings; tolerates numbers and the transcript's ``[id]`` brackets."""
    if isinstance(value, list):
        return [str(v).strip("[] \t") if isinstance(v, str | int) else v for v in value]
    return value


def _clipped(limit: int, *, required: bool) -> Callable[[str], str]:
    """A validator that strips and clips text, refusing it blank when required."""

    def clip(value: str) -> str:
        value = value.strip()
        if required and not value:
            raise ValueError("must not be blank")
        return value[:limit]

    return clip


def _signed(value: float) -> float:
    return round(max(-1.0, min(1.0, value)), 4)


MessageIds = Annotated[tuple[str, ...], BeforeValidator(_ids)]
Unit = Annotated[float, Field(allow_inf_nan=False), AfterValidator(unit)]
Signed = Annotated[float, Field(allow_inf_nan=False), AfterValidator(_signed)]
Label = Annotated[str | float, AfterValidator(lambda v: str(v).strip()[:100])]
Topic = Annotated[str, AfterValidator(_clipped(200, required=True))]
Content = Annotated[str, AfterValidator(_clipped(1000, required=True))]
Context = Annotated[str, AfterValidator(_clipped(1000, required=False))]
FactText = Annotated[str, AfterValidator(_clipped(500, required=True))]
Summary = Annotated[str, AfterValidator(_clipped(2000, required=True))]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReplyUserState(_Model):
    mood: Label | None = None
    confidence: Label | None = None
    focus: Label | None = None


class ReplyOutcome(_Model):
    type: Literal["decision", "agreement", "action"]
    content: Content
    message_ids: MessageIds = ()


class ReplyThread(_Model):
    topic: Topic
    status: Literal["unanswered_question", "promised", "follow_up"]
    context: Context = ""
    message_ids: MessageIds = ()


class ReplyFact(_Model):
    kind: Literal["fact", "preference", "decision"]
    content: FactText
    message_ids: MessageIds = ()
    importance: Unit = 0.5


class Reply(_Model):
    """One session's extraction as the model or program wrote it, clipped to valid ranges."""

    summary: Summary
    topics: tuple[Label, ...] = Field((), max_length=50)
    entities: tuple[Label, ...] = Field((), max_length=100)
    user_state: ReplyUserState = ReplyUserState()
    outcomes: tuple[ReplyOutcome, ...] = Field((), max_length=100)
    open_threads: tuple[ReplyThread, ...] = Field((), max_length=100)
    importance: Unit = 0.5
    urgency: Unit = 0.0
    sentiment: Signed = 0.0
    risk: Unit = 0.0
    facts: tuple[ReplyFact, ...] = Field((), max_length=200)


def parse_reply(raw: str) -> Reply:
    """The validated reply in ``raw`` (```json fences allowed); DataQualityError if invalid."""
    fenced = _FENCE.match(raw)
    body = fenced.group(1) if fenced else raw
    try:
        reply = Reply.model_validate(json.loads(body))
    except json.JSONDecodeError as exc:
        raise DataQualityError(f"reply is not JSON ({exc.msg} at char {exc.pos})") from exc
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise DataQualityError(
            f"reply fails the schema: {exc.error_count()} errors, first at {where}: {first['msg']}"
        ) from exc
    return reply


def _known(ids: Iterable[str], known: set[str]) -> tuple[str, ...]:
    """Cited ids that exist in the session, each once, in citation order."""
    return tuple(dict.fromkeys(i for i in ids if i in known))


def _labels(values: Iterable[str | float]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in (str(x) for x in values) if v))


def _user_state(reply: ReplyUserState, fallback: dict[str, str]) -> dict[str, str]:
    """The reply's mood, confidence and focus; a missing one keeps the fallback's value."""
    given = {"mood": reply.mood, "confidence": reply.confidence, "focus": reply.focus}
    merged = {k: str(v) for k, v in given.items() if v} | {
        k: v for k, v in fallback.items() if not given.get(k)
    }
    return dict(sorted(merged.items()))


def _episode(reply: Reply, known: set[str], fallback: EpisodeDraft) -> EpisodeDraft:
    cues = make_cues(reply.urgency, reply.sentiment, reply.risk, 0)
    return EpisodeDraft(
        summary=reply.summary,
        topics=_labels(reply.topics),
        entities=_labels(reply.entities),
        user_state=_user_state(reply.user_state, fallback.user_state),
        outcomes=tuple(
            Outcome(o.type, o.content, _known(o.message_ids, known)) for o in reply.outcomes
        ),
        open_threads=tuple(
            OpenThread(t.topic, t.status, t.context, _known(t.message_ids, known))
            for t in reply.open_threads
        ),
        importance=reply.importance,
        vehemence=cues.vehemence,
        urgency=cues.urgency,
        sentiment=cues.sentiment,
        risk=cues.risk,
    )


def _fact(fact: ReplyFact, times: dict[str, datetime], last: datetime, heat: float) -> MemoryDraft:
    """A fact memory dated by the last message it cites (else the session's last message)."""
    cited = _known(fact.message_ids, set(times))
    when = max((times[i] for i in cited), default=last)
    return MemoryDraft(fact.kind, fact.content, cited, when, fact.importance, heat)


def to_extraction(state: SessionState, reply: Reply, heuristic: Extraction) -> Extraction:
    """The reply as an extraction: its episode and facts, the heuristic's turns and task card."""
    times = {m.id: m.timestamp for m in state.messages}
    episode = _episode(reply, set(times), heuristic.episode)
    last = state.messages[-1].timestamp
    facts = [_fact(f, times, last, episode.vehemence) for f in reply.facts]
    turns = [m for m in heuristic.memories if m.kind == "turn"]
    memories = sorted(turns + facts, key=lambda m: m.occurred_at)  # stable: turns first
    return replace(heuristic, episode=episode, memories=tuple(memories), tokens={})
