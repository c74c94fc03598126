"""One pass over each message: its text, tokens and cue scores, sentences on demand.

The text analysed is capped at `SCAN_CAP` characters, so the cost per message is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.kernel.records import MessageRecord
from tasks.extraction._scoring import CALM, Cues, score
from tasks.extraction._text import TOKEN, lowercase, split_sentences

SCAN_CAP = 4_000  # chars analysed per message: a pasted log adds cost, not meaning
SPOKEN = ("user", "assistant")
MAX_ITEMS = 20  # outcomes, open threads or artifacts kept per session


@dataclass(slots=True)
class Msg:
    """A message with what the extractor reads from it."""

    record: MessageRecord
    text: str
    lower: str
    tokens: list[str]
    cues: Cues
    sentences: list[tuple[str, str]] | None = None


def analyse(record: MessageRecord) -> Msg:
    """Text, lower-cased text, tokens and cues; only spoken messages are tokenised."""
    text = record.content.strip()[:SCAN_CAP]
    lower = lowercase(text)
    if record.role not in SPOKEN:
        return Msg(record, text, lower, [], CALM)
    tokens = TOKEN.findall(lower)
    return Msg(record, text, lower, tokens, score(tokens, text))


def sentences(msg: Msg) -> list[tuple[str, str]]:
    """(sentence, lower-cased sentence) pairs, split once and only when asked for."""
    if msg.sentences is None:
        msg.sentences = split_sentences(msg.text)
    return msg.sentences


def cued(msg: Msg, cues: frozenset[str]) -> list[tuple[str, str]]:
    """The message's sentences if any token announces a cue of this family, else none."""
    if msg.record.role not in SPOKEN or cues.isdisjoint(msg.tokens):
        return []
    return sentences(msg)
