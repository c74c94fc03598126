"""A memory's text as the passage step reads it: sentences (a long one as windows), each
with the speaker label it was said under, and a length that counts scripts without spaces
fairly (``passage``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.retrieval._time_words import MONTHS

WINDOW_CHARS = 160  # a sentence longer than this is cut into windows of about this size
_SENTENCE_END = re.compile(r"[.!?…](?=\s)|[。！？\n]")
LABEL = re.compile(r"([^\s:]{1,40}(?: [^\s:]{1,40})?): (?=\S)")
_ABBREVIATIONS = frozenset(
    "dr mr mrs ms st jr sr prof vs no nr ca approx e.g i.e z.b bzw sra srta dra av mme".split()
)
# Scripts written without spaces between words: compared by character bigrams.
NO_SPACES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f]+")


def size(text: str) -> int:
    """A text's length, a character of a script without spaces counting three: one says
    about as much as a word of three or four letters."""
    return len(text) + 2 * sum(len(run) for run in NO_SPACES.findall(text))


@dataclass(frozen=True)
class Piece:
    text: str
    speaker: str  # the label it was said under ("Aria"), "" if none
    labelled: bool  # whether its text starts with that label


def _sentences(text: str) -> list[str]:
    """The text's sentences; a period after "Dr", "e.g" or a single capital ends none."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group() == "." and _abbreviated(text, m.start()):
            continue
        piece = text[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    rest = text[start:].strip()
    return [*out, rest] if rest else out


def _abbreviated(text: str, dot: int) -> bool:
    """A period that ends "Dr", "e.g" or an initial, or a day's number before its month or
    a lower-case word ("der 2. März", "am 3. des Monats"), ends no sentence."""
    before = text[max(0, dot - 8) : dot].split()
    if not before:
        return False
    word = before[-1].lstrip("([\"'")
    if word.isdigit() and len(word) <= 2:
        after = text[dot + 1 : dot + 16].split()
        following = after[0].casefold() if after else ""
        return following in MONTHS or following[:1].islower()
    return word.casefold() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _windows(sentence: str) -> list[str]:
    """A long sentence as windows of about ``WINDOW_CHARS``, cut between words."""
    if size(sentence) <= WINDOW_CHARS:
        return [sentence]
    words = sentence.split(" ")
    if len(words) == 1:  # no spaces: cut by characters
        step = max(1, WINDOW_CHARS * len(sentence) // size(sentence))
        return [sentence[i : i + step] for i in range(0, len(sentence), step)]
    out, current = [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > WINDOW_CHARS:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [*out, current] if current else out


def pieces(content: str) -> list[Piece]:
    """Sentences (long ones as windows), each with the speaker label it was said under."""
    pieces: list[Piece] = []
    speaker = ""
    for sentence in _sentences(content):
        label = LABEL.match(sentence)
        if label is not None:
            speaker = label.group(1)
        for n, window in enumerate(_windows(sentence)):
            pieces.append(Piece(window, speaker, label is not None and n == 0))
    return pieces
