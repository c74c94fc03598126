"""Batches capped by padded tokens: every text once, no batch over the cap but a lone long
text, little padding, over many random length mixes."""

from __future__ import annotations

import random

import pytest

from storage.embedding import token_batches


def padded(batch: list[int], lengths: list[int]) -> int:
    """Rows times the longest text, a text counting at least one token."""
    return len(batch) * max(max(lengths[i] for i in batch), 1)


def mixes() -> list[tuple[list[int], int]]:
    """Random lengths (short chat turns, long documents, both, empty texts) and caps."""
    rng = random.Random(35)
    cases = []
    for _ in range(300):
        n = rng.choice([0, 1, 2, 7, 64, 500])
        kind = rng.choice(["short", "long", "mixed", "equal"])
        if kind == "short":
            lengths = [rng.randint(2, 40) for _ in range(n)]
        elif kind == "long":
            lengths = [rng.randint(100, 256) for _ in range(n)]
        elif kind == "equal":
            lengths = [rng.randint(0, 256)] * n
        else:
            lengths = [rng.choice([rng.randint(0, 12), rng.randint(13, 256)]) for _ in range(n)]
        cases.append((lengths, rng.choice([1, 16, 100, 256, 512, 2048, 8192])))
    return cases


def test_every_text_lands_in_one_batch_within_the_cap() -> None:
    for lengths, cap in mixes():
        batches = token_batches(lengths, cap)

        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        assert all(batches)  # no empty batch
        for batch in batches:
            assert len(batch) == 1 or padded(batch, lengths) <= cap, (lengths, cap)
        # Shortest first, and a batch's texts are neighbours by length: no text in a
        # later batch is shorter than one in an earlier batch.
        flat = [lengths[i] for b in batches for i in b]
        assert flat == sorted(flat)


def test_batches_are_as_full_as_the_cap_allows() -> None:
    for lengths, cap in mixes():
        batches = token_batches(lengths, cap)

        # A batch ends only because the next text would not have fit: greedy, not timid.
        for batch, following in zip(batches, batches[1:], strict=False):
            assert padded([*batch, following[0]], lengths) > cap, (lengths, cap)


def test_sorting_keeps_padding_small_where_rows_would_waste_it() -> None:
    rng = random.Random(7)
    lengths = [rng.choice([8, 9, 10, 250]) for _ in range(1000)]

    batches = token_batches(lengths, 2048)

    real = sum(lengths)
    pads = sum(padded(b, lengths) for b in batches)
    assert pads <= real * 1.15  # sorted neighbours differ by a token or two
    # Short texts share big batches, long ones small ones: about the same work per batch.
    rows = {lengths[b[0]]: len(b) for b in batches}
    assert rows[8] >= 200 and rows[250] <= 8


def test_a_cap_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        token_batches([3, 4], 0)
    assert token_batches([], 100) == []
