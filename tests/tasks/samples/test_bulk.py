"""Bulk benchmark data: counts, time ranges, skew and determinism."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from tasks.samples import generate_bulk


def test_generate_bulk_counts_ranges_and_determinism() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    end = datetime(2026, 3, 1, tzinfo=UTC)
    rows = list(generate_bulk(300, 20, start=start, end=end, namespaces=20, seed=7))
    assert len(rows) == 300
    assert all(len(messages) == 20 for _, messages in rows)
    messages = [m for _, ms in rows for m in ms]
    assert all(start <= m.timestamp <= end for m in messages)
    assert all(60 <= len(m.content) <= 300 for m in messages)
    assert 100 < sum(len(m.content) for m in messages) / len(messages) < 250
    assert [m.role for m in rows[0][1][:4]] == ["user", "assistant", "user", "assistant"]
    sizes = Counter(session.namespace for session, _ in rows)
    assert sizes.most_common(1)[0][1] > 5 * min(sizes.values())
    assert rows == list(generate_bulk(300, 20, start=start, end=end, namespaces=20, seed=7))
    assert rows != list(generate_bulk(300, 20, start=start, end=end, namespaces=20, seed=8))


def test_generate_bulk_rejects_naive_times() -> None:
    with pytest.raises(ValueError, match="UTC offset"):
        generate_bulk(1, 1, start=datetime(2026, 1, 1), end=datetime(2026, 2, 1))
