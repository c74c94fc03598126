"""Redacting the record types: a session's title and its messages' content.

Ids, roles, speakers and times are kept: they are how the store and the model refer to a
message, and speakers are names, which no category covers.
"""

from __future__ import annotations

from collections.abc import Iterable

from storage.kernel.records import MessageRecord, SessionRecord
from storage.redaction._redactor import Redactor

_TITLE_CHARS = 500  # the column's size; placeholders may be longer than what they replace


def redact_session(record: SessionRecord, redactor: Redactor) -> SessionRecord:
    """The session with its title redacted."""
    if not record.title or not redactor.policy.active:
        return record
    return record.model_copy(update={"title": redactor.redact(record.title)[:_TITLE_CHARS]})


def redact_messages(
    messages: Iterable[MessageRecord], redactor: Redactor
) -> tuple[MessageRecord, ...]:
    """The messages with their content redacted, in one scope, in order."""
    if not redactor.policy.active:
        return tuple(messages)
    return tuple(m.model_copy(update={"content": redactor.redact(m.content)}) for m in messages)
