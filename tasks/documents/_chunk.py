"""Chunking: structure first (sections under ``#`` headings, then paragraphs), size second.

A section's paragraphs are packed into chunks of at most ``size`` characters; a paragraph
longer than that is cut by size, at a space where one is near, each piece sharing
``overlap`` characters with the one before. A chunk never spans two sections and carries
the path of headings above it ("Guide > Setup"). Each chunk is an exact span of the text:
``text[start:end] == chunk.text``, so its place in the document is known. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")
_PARAGRAPH = re.compile(r"\S(?:.*?\S)??(?=\n[ \t]*\n|\s*\Z)", re.DOTALL)


@dataclass(frozen=True)
class Span:
    """One chunk: where it is in the text, its text, and the headings above it."""

    start: int
    end: int
    text: str
    heading: str


def chunk(text: str, size: int, overlap: int) -> list[Span]:
    """The text's chunks in order."""
    if overlap >= size:
        raise ValueError(f"overlap {overlap} must be smaller than the chunk size {size}")
    spans: list[Span] = []
    for heading, start, end in sections(text):
        for a, b in _packed(_paragraphs(text, start, end), size):
            for x, y in _cut(text, a, b, size, overlap):
                spans.append(Span(x, y, text[x:y], heading))
    return spans


def sections(text: str) -> Iterator[tuple[str, int, int]]:
    """(heading path, body start, body end) of each section, headings in fenced code aside."""
    path: list[tuple[int, str]] = []
    start, offset, fenced = 0, 0, False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _HEADING.match(line.rstrip("\n"))
        if found is not None:
            yield _path(path), start, offset
            level = len(found.group(1))
            path = [(n, h) for n, h in path if n < level] + [(level, found.group(2).strip())]
            start = offset + len(line)
        offset += len(line)
    yield _path(path), start, len(text)


def _path(path: list[tuple[int, str]]) -> str:
    return " > ".join(h for _, h in path)


def _paragraphs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    body = text[start:end]
    return [(start + m.start(), start + m.end()) for m in _PARAGRAPH.finditer(body)]


def _packed(paragraphs: list[tuple[int, int]], size: int) -> Iterator[tuple[int, int]]:
    """Neighbouring paragraphs joined while the span stays within ``size``."""
    current: tuple[int, int] | None = None
    for a, b in paragraphs:
        if current is not None and b - current[0] <= size:
            current = (current[0], b)
            continue
        if current is not None:
            yield current
        current = (a, b)
    if current is not None:
        yield current


def _cut(text: str, start: int, end: int, size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """A span cut into pieces of at most ``size``, at a space when one is in the last fifth."""
    while end - start > size:
        stop = start + size
        space = text.rfind(" ", stop - size // 5, stop)
        cut = space if space > start + overlap else stop
        yield _trimmed(text, start, cut)
        back = max(cut - overlap, start + 1)
        word = text.find(" ", back, cut)  # the overlap starts at a word
        start = word + 1 if overlap and word != -1 and text[back - 1] != " " else back
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield _trimmed(text, start, end)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
