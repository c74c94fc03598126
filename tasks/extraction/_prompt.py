"""What the llm and command extractors send: the instructions, and the session cut to size.

A session longer than the input budget loses its oldest messages, never its latest: the
outcome of a conversation is usually at its end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from storage.kernel.records import MessageRecord, SessionState

__all__ = ["SYSTEM_PROMPT", "command_payload", "recent", "transcript"]

SYSTEM_PROMPT = """\
You turn one conversation into memory for an AI assistant. Reply with ONE JSON object and \
nothing else, with exactly these keys:
- "summary": 2-4 sentences: what the conversation was about, what was decided, what is left.
- "topics": up to 8 short topic labels.
- "entities": names of people, places, products, projects mentioned.
- "user_state": {"mood": one word, "confidence": "certain" or "uncertain", \
"focus": what the user cares about most, a few words}.
- "outcomes": [{"type": "decision" | "agreement" | "action", "content": one sentence, \
"message_ids": ids of the messages it comes from}].
- "open_threads": [{"topic": a few words, "status": "unanswered_question" | "promised" | \
"follow_up", "context": one sentence, "message_ids": [...]}].
- "importance": 0..1, how much this conversation matters to remember.
- "urgency": 0..1. "sentiment": -1..1 (the user's). "risk": 0..1 (health, money, safety, \
security, legal).
- "facts": durable facts about the user or their world, [{"kind": "fact" | "preference" | \
"decision", "content": one self-contained sentence naming who, "message_ids": [...], \
"importance": 0..1}].
Each transcript line is "[message id] speaker (role): content". Cite message ids exactly as \
written, without brackets. Use empty lists when there is nothing to report. Write the summary, \
outcomes and facts in the conversation's language."""

_OMITTED = "[earlier messages omitted]"


def _line(message: MessageRecord) -> str:
    return f"[{message.id}] {message.speaker} ({message.role}): {message.content}"


def recent(
    messages: Sequence[MessageRecord], budget: int, size: Callable[[MessageRecord], int]
) -> tuple[MessageRecord, ...]:
    """The latest messages whose sizes fit the budget (at least the last message)."""
    kept: list[MessageRecord] = []
    used = 0
    for message in reversed(messages):
        used += size(message)
        if kept and used > budget:
            break
        kept.append(message)
    return tuple(reversed(kept))


def transcript(state: SessionState, max_chars: int) -> str:
    """The session as transcript lines, oldest lines dropped to stay within ``max_chars``."""
    budget = max_chars - len(_OMITTED) - 1
    kept = recent(state.messages, budget, lambda m: len(_line(m)) + 1)
    lines = [_line(m) for m in kept]
    if len(kept) < len(state.messages):
        lines.insert(0, _OMITTED)
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[-max_chars:]


def command_payload(state: SessionState, max_chars: int) -> dict[str, Any]:
    """The JSON a command extractor reads on stdin, oldest messages dropped past the budget."""
    kept = recent(state.messages, max_chars, lambda m: len(m.content))
    return {
        "session": state.session.model_dump(mode="json"),
        "messages": [
            {
                "id": m.id,
                "role": m.role,
                "speaker": m.speaker,
                "content": m.content[-max_chars:],
                "timestamp": m.timestamp.isoformat(),
            }
            for m in kept
        ],
        "fingerprint": state.fingerprint,
    }
