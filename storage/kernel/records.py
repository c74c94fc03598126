"""Validated records of raw conversations: what a source hands to the store.

Each field is of one of the kinds ``storage.kernel.inputs`` checks, the same at every door.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from storage.kernel.inputs import Identifier, Label, Moment, StorableText, storable

Role = Literal["user", "assistant", "tool", "system"]
SessionKind = Literal["direct", "group", "subagent"]

# A namespace: 1-100 lowercase letters, digits, '.', '_' or '-', starting with a letter or
# digit. Lowercase: it names a folder, and ALICE's and alice's would be one on a filesystem
# that ignores case (macOS's and Windows' defaults).
# Check it with NAMESPACE.fullmatch: `$` alone also matches before a trailing newline.
NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
NAMESPACE = re.compile(NAMESPACE_PATTERN)

__all__ = [
    "NAMESPACE",
    "NAMESPACE_PATTERN",
    "MessageRecord",
    "Role",
    "SessionKind",
    "SessionRecord",
    "SessionState",
    "StorableText",
    "message_at",
    "storable",
]


class SessionRecord(BaseModel):
    """One conversation: whose memory it feeds (namespace), which agent, which kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Identifier
    namespace: str = Field(pattern=NAMESPACE_PATTERN)
    agent: Label = Field(min_length=1, max_length=200)
    kind: SessionKind = "direct"
    title: Label | None = Field(None, max_length=500)


class MessageRecord(BaseModel):
    """One message of a session; its time is a ``Moment`` (aware, 1900 to a day from now)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Identifier
    role: Role
    speaker: Label = Field(min_length=1, max_length=200)
    content: StorableText = Field(max_length=1_000_000)
    timestamp: Moment


def message_at(clock: datetime, **fields: object) -> MessageRecord:
    """A message checked against ``clock`` instead of the real one: the now of a history
    that is generated or replayed (the demo's days, a benchmark's store)."""
    return MessageRecord.model_validate(fields, context={"now": clock})


class SessionState(BaseModel):
    """A session with its messages up to a point in time, ordered by (timestamp, id)."""

    model_config = ConfigDict(frozen=True)

    session: SessionRecord
    messages: tuple[MessageRecord, ...]
    fingerprint: str

    @property
    def user_messages(self) -> tuple[MessageRecord, ...]:
        return tuple(m for m in self.messages if m.role == "user")
