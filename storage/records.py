"""Validated records of raw conversations: what a source hands to the store."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

Role = Literal["user", "assistant", "tool", "system"]
SessionKind = Literal["direct", "group", "subagent"]

_ID_PATTERN = r"^[^\s/\\]{1,200}$"
# A namespace: 1-100 lowercase letters, digits, '.', '_' or '-', starting with a letter or
# digit. Lowercase: it names a folder, and ALICE's and alice's would be one on a filesystem
# that ignores case (macOS's and Windows' defaults).
# Check it with NAMESPACE.fullmatch: `$` alone also matches before a trailing newline.
NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
NAMESPACE = re.compile(NAMESPACE_PATTERN)
# PostgreSQL stores neither NUL in text or jsonb nor lone surrogates, which are not Unicode
# (JSON's "\ud800" escape, or a transcript's bytes that were not UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: str) -> str:
    """The text unchanged, or ValueError naming the first character PostgreSQL cannot store."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return value
    char = found.group()
    what = "a NUL character (U+0000)" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
    raise ValueError(f"holds {what}, which PostgreSQL cannot store")


StorableText = Annotated[str, AfterValidator(storable)]


class SessionRecord(BaseModel):
    """One conversation: whose memory it feeds (namespace), which agent, which kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: StorableText = Field(pattern=_ID_PATTERN)
    namespace: str = Field(pattern=NAMESPACE_PATTERN)
    agent: StorableText = Field(min_length=1, max_length=200)
    kind: SessionKind = "direct"
    title: StorableText | None = Field(None, max_length=500)


class MessageRecord(BaseModel):
    """One message of a session; timestamps are timezone-aware."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: StorableText = Field(pattern=_ID_PATTERN)
    role: Role
    speaker: StorableText = Field(min_length=1, max_length=200)
    content: StorableText = Field(max_length=1_000_000)
    timestamp: datetime

    @field_validator("timestamp")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("timestamp needs a UTC offset, e.g. 2026-11-20T09:15:00Z")
        return value


class SessionState(BaseModel):
    """A session with its messages up to a point in time, ordered by (timestamp, id)."""

    model_config = ConfigDict(frozen=True)

    session: SessionRecord
    messages: tuple[MessageRecord, ...]
    fingerprint: str

    @property
    def user_messages(self) -> tuple[MessageRecord, ...]:
        return tuple(m for m in self.messages if m.role == "user")
