"""The episode summary: who talked about what, what was asked, decided and left open."""

from __future__ import annotations

from collections.abc import Sequence

from storage.kernel.records import MessageRecord
from tasks.extraction import _lexicon as lexicon
from tasks.extraction._analysis import SPOKEN, Msg, sentences
from tasks.extraction._text import clip, is_question
from tasks.extraction._types import OpenThread, Outcome

_LABELS = {"decision": "Decided", "agreement": "Agreed", "action": "Action"}


def _display_name(record: MessageRecord) -> str:
    if record.speaker.strip().lower() in lexicon.GENERIC_SPEAKERS:
        return f"the {record.role}"
    return record.speaker.strip()


def _join(names: Sequence[str]) -> str:
    if len(names) > 4:
        return f"{', '.join(names[:3])} and {len(names) - 3} others"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _opening(spoken: Sequence[Msg], topics: Sequence[str], total: int) -> str:
    names = list(dict.fromkeys(_display_name(m.record) for m in spoken))
    if not names:
        return f"The session holds {total} message(s), none from the user or the assistant."
    who = _join(names)
    who = who[0].upper() + who[1:]
    if topics:
        return f"{who} talked about {', '.join(topics[:3])}."
    return f"{who} had a brief exchange."


def _request(users: Sequence[Msg]) -> str:
    """What the user asked for: the first question, else the first thing they said."""
    for msg in users:
        questions = sentences(msg) if "?" in msg.text or "？" in msg.text else []
        for sentence, _ in questions:
            if is_question(sentence):
                return f'{_display_name(msg.record)} asked: "{clip(sentence, 160)}"'
    for msg in users:
        if msg.text:
            first = sentences(msg)[0][0]
            return f'{_display_name(msg.record)} said: "{clip(first, 160)}"'
    return "The user sent no text." if users else "The user did not speak."


def summarise(
    msgs: Sequence[Msg],
    topics: Sequence[str],
    outcomes: Sequence[Outcome],
    threads: Sequence[OpenThread],
) -> str:
    """A few sentences: participants and topics, the request, first outcome and thread."""
    if not msgs:
        return "The session has no messages yet. Nothing was extracted."
    spoken = [m for m in msgs if m.record.role in SPOKEN]
    users = [m for m in msgs if m.record.role == "user"]
    parts = [_opening(spoken, topics, len(msgs)), _request(users)]
    if outcomes:
        more = f" (+{len(outcomes) - 1} more)" if len(outcomes) > 1 else ""
        parts.append(f'{_LABELS[outcomes[0].type]}: "{clip(outcomes[0].content, 160)}"{more}.')
    if threads:
        more = f" (+{len(threads) - 1} more)" if len(threads) > 1 else ""
        parts.append(f'Still open: "{clip(threads[0].context, 160)}"{more}.')
    return " ".join(parts)
