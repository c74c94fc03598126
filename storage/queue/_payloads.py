"""What the queue carries: payloads, validated when enqueued (never stored to fail later), and
the records the queue functions return.

Unknown fields are errors, as in transcripts, so a typo is refused instead of ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from storage.kernel.errors import InputError
from storage.kernel.inputs import Identifier, Moment, StorableText, check_keys, describe
from storage.kernel.records import NAMESPACE, MessageRecord, SessionRecord
from storage.kernel.settings import DocumentSettings
from storage.queue._document import AddDocument
from storage.redaction import Redactor, redact_messages, redact_session

Op = Literal[
    "ADD_MEMORY",
    "RECORD_MESSAGE",
    "SAVE_PREFERENCE",
    "UPDATE_GOAL",
    "FORGET_MEMORY",
    "ADD_DOCUMENT",
]
OPS: tuple[Op, ...] = get_args(Op)
MemoryKind = Literal["note", "fact", "preference", "goal", "decision"]


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


class MemoryText(_Payload):
    """A memory written from text: its kind comes from the operation (``memory_kind``)."""

    content: StorableText = Field(min_length=1, max_length=20_000)
    importance: float | None = Field(None, ge=0, le=1)
    occurred_at: Moment | None = None
    session_id: Identifier | None = None

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content is blank")
        return value

    @property
    def memory_kind(self) -> str:
        raise NotImplementedError


class AddMemory(MemoryText):
    """ADD_MEMORY: a note, fact, preference, goal or decision."""

    kind: MemoryKind = "note"

    @property
    def memory_kind(self) -> str:
        return self.kind


class SavePreference(MemoryText):
    """SAVE_PREFERENCE: a memory of kind ``preference``."""

    @property
    def memory_kind(self) -> str:
        return "preference"


class UpdateGoal(MemoryText):
    """UPDATE_GOAL: a memory of kind ``goal`` (earlier goals are kept; ranking prefers newer)."""

    @property
    def memory_kind(self) -> str:
        return "goal"


class RecordMessage(_Payload):
    """RECORD_MESSAGE: a message appended to a session (recorded or updated on the way)."""

    session: SessionRecord
    message: MessageRecord


class ForgetMemory(_Payload):
    """FORGET_MEMORY: delete one memory of the item's namespace."""

    memory_id: int = Field(ge=1)


Payload = AddMemory | SavePreference | UpdateGoal | RecordMessage | ForgetMemory | AddDocument

MODELS: dict[str, type[Payload]] = {
    "ADD_MEMORY": AddMemory,
    "SAVE_PREFERENCE": SavePreference,
    "UPDATE_GOAL": UpdateGoal,
    "RECORD_MESSAGE": RecordMessage,
    "FORGET_MEMORY": ForgetMemory,
    "ADD_DOCUMENT": AddDocument,
}
MAX_UPLOAD_BYTES = DocumentSettings().max_upload_bytes


def validate_payload(
    namespace: str, op: str, payload: object, *, max_document_bytes: int = MAX_UPLOAD_BYTES
) -> Payload:
    """The payload parsed for ``op``; anything wrong raises ``InputError`` naming the field
    (``TooLarge`` for a document over ``max_document_bytes``)."""
    if not isinstance(namespace, str) or not NAMESPACE.fullmatch(namespace):
        raise InputError(
            f"namespace {namespace!r} is not valid: use 1-100 lowercase letters, digits, '.', "
            "'_' or '-', starting with a letter or digit"
        )
    model = MODELS.get(op)
    if model is None:
        raise InputError(f"unknown op {op!r}; use one of {', '.join(OPS)}")
    if not isinstance(payload, Mapping):
        raise InputError(f"{op} payload must be a JSON object, not {type(payload).__name__}")
    try:
        check_keys(payload)
    except ValueError as exc:
        raise InputError(f"{op} payload refused: {exc}") from exc
    try:
        parsed = model.model_validate(payload)
    except ValidationError as exc:
        raise InputError(f"{op} payload refused: {describe(exc)}") from exc
    if isinstance(parsed, RecordMessage) and parsed.session.namespace != namespace:
        raise InputError(
            f"{op} payload refused: session.namespace {parsed.session.namespace!r} is not "
            f"the item's namespace {namespace!r}"
        )
    if isinstance(parsed, AddDocument):
        parsed.admit(max_document_bytes)
    return parsed


def redacted(payload: Payload, redactor: Redactor) -> Payload:
    """The payload with its texts redacted (before storage): memory text, message, title. A
    document is stored as given, as ``docs ingest`` stores a file."""
    if isinstance(payload, RecordMessage):
        [message] = redact_messages([payload.message], redactor)
        session = redact_session(payload.session, redactor)
        return payload.model_copy(update={"session": session, "message": message})
    if isinstance(payload, MemoryText):
        # Clipped to the field's limit, so the stored payload still validates when claimed.
        return payload.model_copy(update={"content": redactor.redact(payload.content)[:20_000]})
    return payload


def parse_stored(op: str, payload: Mapping[str, object]) -> Payload:
    """Re-read a payload that was validated at enqueue time."""
    return MODELS[op].model_validate(payload)


@dataclass(frozen=True)
class Enqueued:
    """The queued item's id; ``duplicate``: its idempotency key was queued before, not again."""

    id: int
    duplicate: bool


@dataclass(frozen=True)
class QueueItem:
    """A claimed item: what to do, and the claim (worker, attempt) that may complete it."""

    id: int
    namespace: str
    op: Op
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    claimed_by: str
    claimed_at: datetime
    created_at: datetime


@dataclass(frozen=True)
class Reclaimed:
    """Items taken back from drainers that are gone or stopped answering."""

    requeued: int
    dead: int


@dataclass(frozen=True)
class QueueStats:
    """Health of the queue at one moment."""

    pending: int
    ready: int
    processing: int
    stuck: int  # processing too long, by a worker still connected (or not known to be gone)
    abandoned: int  # processing, held by a worker whose database connection is gone
    completed: int
    dead: int
    oldest_pending_seconds: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DeadItem:
    """An item that used up its attempts, with the error of the last one."""

    id: int
    namespace: str
    op: str
    attempts: int
    last_error: str | None
    updated_at: datetime
