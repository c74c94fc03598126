"""Public ids (``storage.public_ids``): a keyed permutation of the real ids, so the ids a
tenant sees say nothing of how many ids the others took."""

from __future__ import annotations

import pytest

from storage.public_ids import LARGEST, SHOWN, Kind, PublicIds
from storage.server.engine import Store

KEY = bytes(range(32))


def test_every_real_id_has_one_public_id_and_back() -> None:
    ids = PublicIds(KEY)
    reals = [*range(0, 5000), *range(LARGEST - 5000, LARGEST)]
    shown = [ids.show("memory", real) for real in reals]
    assert len(set(shown)) == len(reals)
    assert all(1 <= public <= LARGEST <= 2**53 for public in shown)  # exact in a JSON number
    assert [ids.take("memory", public) for public in shown] == reals
    for outside in (0, -1, LARGEST + 1, 2**63 - 1):
        assert ids.take("memory", outside) is None
    with pytest.raises(ValueError, match="outside"):
        ids.show("memory", LARGEST)


def test_public_ids_keep_neither_order_nor_gaps() -> None:
    ids = PublicIds(KEY)
    reals = list(range(1000, 3000))
    shown = [ids.show("memory", real) for real in reals]
    steps = {b - a for a, b in zip(shown, shown[1:], strict=False)}
    assert len(steps) == len(shown) - 1  # no two gaps alike, where the real ones all are 1
    ranks = {public: n for n, public in enumerate(sorted(shown))}
    n = len(shown)
    mean = (n - 1) / 2
    covariance = sum((i - mean) * (ranks[p] - mean) for i, p in enumerate(shown))
    spearman = covariance / sum((i - mean) ** 2 for i in range(n))
    assert abs(spearman) < 0.1  # the order of public ids says nothing of the real order


def test_the_kind_and_the_key_each_give_other_ids() -> None:
    ids, other = PublicIds(KEY), PublicIds(bytes(range(1, 33)))
    assert ids.show("memory", 42) != ids.show("queue", 42) != ids.show("chunk", 42)
    assert ids.show("memory", 42) != other.show("memory", 42)
    assert ids.take("queue", ids.show("memory", 42)) != 42


def test_an_id_shown_again_is_the_same_whatever_was_kept_meanwhile() -> None:
    ids, other = PublicIds(KEY), PublicIds(bytes(range(1, 33)))
    kinds: tuple[Kind, ...] = ("memory", "queue")
    first = {(kind, real): ids.show(kind, real) for kind in kinds for real in (7, 8)}
    for real in range(SHOWN + 10):  # more than are kept: 7 and 8 are shown afresh below
        ids.show("chunk", real)
    for _ in range(2):  # afresh, then as kept
        assert {key: ids.show(*key) for key in first} == first
    assert other.show("memory", 7) != first[("memory", 7)]  # each key keeps its own


def test_the_store_keeps_one_key_for_every_serving_process(store: Store) -> None:
    with store.engine.connect() as conn:
        first, again = PublicIds.load(conn), PublicIds.load(conn)
    assert first.show("memory", 7) == again.show("memory", 7) != 8


def test_a_public_id_stays_what_it_was_shown_as() -> None:
    """Clients keep the ids they were shown: the permutation of a key never changes (these
    were shown before the rounds were written out)."""
    ids = PublicIds(KEY)
    shown = {
        ("memory", 1): 1724545778384867,
        ("memory", 2): 1241240066894773,
        ("memory", 1000): 978321725250503,
        ("memory", 2**40): 2843789925841351,
        ("queue", 1): 1917978830451255,
        ("queue", 1000): 103531619262543,
    }
    kinds: dict[str, Kind] = {"memory": "memory", "queue": "queue"}
    assert {(k, r): ids.show(kinds[k], r) for k, r in shown} == shown
    assert {(k, r): ids.take(kinds[k], p) for (k, r), p in shown.items()} == {
        (k, r): r for k, r in shown
    }
