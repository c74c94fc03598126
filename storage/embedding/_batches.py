"""Batches of texts capped by their padded token count, not by how many texts they hold.

A batch costs what its padded input holds: rows times its longest text. Sorted by length,
neighbours pad little, and a cap on tokens keeps every batch near the size the CPU caches
serve best, whether it holds 400 short replies or 8 long documents; a cap on rows gave
the short ones tiny batches and the long ones huge ones.
"""

from __future__ import annotations

from collections.abc import Sequence


def token_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indexes of ``lengths`` in batches, shortest texts first: each batch's rows times its
    longest length stays within ``max_tokens``, except a single text longer than that,
    which is a batch of its own. Every index appears in exactly one batch."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Sorted ascending, so this text is the batch's longest once added.
        if current and (len(current) + 1) * max(lengths[i], 1) > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches
