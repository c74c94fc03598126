"""What the llm and command extractors send is redacted; what comes back may be restored.

One ``Redactor`` per extractor call is the scope: placeholders are consistent over the
session's messages and title, so ``<EMAIL_1>`` in two messages is one address. The reply's
placeholders are put back to their values locally (the values are in the stored session
anyway) unless the policy redacts before storage, where memories keep the placeholders.
"""

from __future__ import annotations

from storage.kernel.records import SessionState
from storage.redaction import Redactor, redact_messages, redact_session
from tasks.extraction._reply import Reply

__all__ = ["redact_state", "restore_reply"]


def redact_state(state: SessionState, redactor: Redactor) -> SessionState:
    """The state with its messages' content and its title redacted (ids, speakers kept)."""
    if not redactor.policy.active:
        return state
    messages = redact_messages(state.messages, redactor)
    session = redact_session(state.session, redactor)
    return state.model_copy(update={"messages": messages, "session": session})


def restore_reply(reply: Reply, redactor: Redactor) -> Reply:
    """The reply with this call's placeholders put back (validated and clipped again)."""
    if not redactor.placeholders:
        return reply
    return Reply.model_validate(redactor.restore_all(reply.model_dump()))
