"""Chunks of a long message: every character indexed, no chunk over ``CHUNK_CHARS``.

A message up to ``CHUNK_CHARS`` is one chunk, itself. A longer one is cut at the last
paragraph break in the second half of the window, else the last line break, sentence end
or space there; only a run of ``CHUNK_CHARS`` without any white space is cut inside. Each
chunk after the first starts up to ``OVERLAP_CHARS`` before the previous cut, at the start
of a word, so a phrase that spans a cut is still whole in one chunk.
"""

from __future__ import annotations

import re

__all__ = ["CHUNK_CHARS", "OVERLAP_CHARS", "chunk_text"]

CHUNK_CHARS = 2_000  # as much as one turn memory held before chunking: short turns unchanged
OVERLAP_CHARS = 200
# Where a cut may go, best first; a cut falls where the match starts.
_BREAKS = (
    re.compile(r"\n[^\S\n]*\n"),  # paragraph
    re.compile(r"\n"),  # line
    re.compile(r"(?<=[.!?;:。！？…])\s"),  # sentence or clause end
    re.compile(r"\s"),  # word
)
_WORD_START = re.compile(r"(?<=\s)\S")


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
    """The text, stripped, as chunks of at most ``size`` characters that cover all of it."""
    text = text.strip()
    chunks: list[str] = []
    start = 0
    while len(text) - start > size:
        end = _cut(text, start, size)
        chunks.append(text[start:end].strip())
        start = _next_start(text, start, end, overlap)
    chunks.append(text[start:].strip())
    return chunks


def _cut(text: str, start: int, size: int) -> int:
    """The end of the chunk that starts at ``start``: the best break in its second half."""
    low, high = start + size // 2, start + size
    for pattern in _BREAKS:
        found = [m.start() for m in pattern.finditer(text, low, high + 1)]
        if found:
            return found[-1]
    return high


def _next_start(text: str, start: int, end: int, overlap: int) -> int:
    """The first word that starts within ``overlap`` before ``end``; else ``end`` itself."""
    word = _WORD_START.search(text, max(end - overlap, start + 1), end)
    return end if word is None else word.start()
