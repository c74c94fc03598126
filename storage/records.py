"""Validated records of raw conversations: what a source hands to the store."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["user", "assistant", "tool", "system"]
SessionKind = Literal["direct", "group", "subagent"]

_ID_PATTERN = r"^[^\s/\\]{1,200}$"


class SessionRecord(BaseModel):
    """One conversation: whose memory it feeds (namespace), which agent, which kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID_PATTERN)
    namespace: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    agent: str = Field(min_length=1, max_length=200)
    kind: SessionKind = "direct"
    title: str | None = Field(None, max_length=500)


class MessageRecord(BaseModel):
    """One message of a session; timestamps are timezone-aware."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID_PATTERN)
    role: Role
    speaker: str = Field(min_length=1, max_length=200)
    content: str = Field(max_length=1_000_000)
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
