"""Chunks of long messages: whole coverage, bounded size, cuts at boundaries, small overlap."""

from __future__ import annotations

import re

import pytest

from tasks.extraction import CHUNK_CHARS, OVERLAP_CHARS, chunk_text


def _paragraphs(n: int) -> str:
    sentence = "The backup of volume {i} finished at {i}:00 with no errors reported. "
    return "\n\n".join("".join(sentence.format(i=10 * p + s) for s in range(7)) for p in range(n))


def _covered(text: str, chunks: list[str]) -> None:
    """Every chunk is a piece of the text, in order, with nothing but white space left out."""
    end = 0
    for chunk in chunks:
        start = text.find(chunk, max(0, end - OVERLAP_CHARS - 1))
        assert start >= 0 and text[end:start].strip() == ""
        end = start + len(chunk)
    assert text[end:].strip() == ""


def test_a_message_up_to_the_size_is_one_chunk_unchanged() -> None:
    assert chunk_text("  Short and sweet.\n") == ["Short and sweet."]
    exact = "word " * (CHUNK_CHARS // 5)
    assert chunk_text(exact) == [exact.strip()]


@pytest.mark.parametrize("length", [2_001, 9_000, 60_000])
def test_a_long_message_is_covered_whole_by_bounded_chunks(length: int) -> None:
    text = _paragraphs(200)[:length].strip()
    chunks = chunk_text(text)
    assert len(chunks) >= 2
    assert all(0 < len(c) <= CHUNK_CHARS for c in chunks)
    _covered(text, chunks)


def test_cuts_fall_at_paragraphs_then_sentences_then_words_never_inside_a_word() -> None:
    text = _paragraphs(40)
    chunks = chunk_text(text)
    assert all(c.endswith(".") for c in chunks)  # paragraph and sentence ends
    one_paragraph = _paragraphs(1) * 60  # no paragraph break: sentence ends
    assert all(c.endswith(".") for c in chunk_text(one_paragraph))
    words = " ".join(f"w{i:05d}" for i in range(2_000))  # no sentence: words
    pieces = chunk_text(words)
    assert all(re.fullmatch(r"w\d{5}( w\d{5})*", c) for c in pieces)


def test_neighbouring_chunks_overlap_a_little_at_a_word_start() -> None:
    words = " ".join(f"w{i:05d}" for i in range(2_000))
    chunks = chunk_text(words)
    for before, after in zip(chunks, chunks[1:], strict=False):
        shared = set(before.split()) & set(after.split())
        assert 0 < sum(len(w) + 1 for w in shared) <= OVERLAP_CHARS + 6
        assert after.split()[0] in before.split()


def test_a_run_without_white_space_is_cut_at_the_size() -> None:
    chunks = chunk_text("x" * 4_500)
    assert [len(c) for c in chunks] == [CHUNK_CHARS, CHUNK_CHARS, 500]


def test_the_longest_allowed_message_is_covered() -> None:
    text = _paragraphs(12_000)[:1_000_000]
    chunks = chunk_text(text)
    assert 500 <= len(chunks) <= 700
    _covered(text, chunks)
