"""Shards split namespaces alike in Python and in PostgreSQL, each namespace in one shard."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storage.kernel.shards import Shard, in_shard, shard_params
from storage.server.engine import Store

NAMESPACES = [f"user-{i}" for i in range(200)] + ["ünïcode", "日本語", "a" * 100, "x"]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_postgres_and_python_put_each_namespace_in_the_same_one_shard(
    store: Store, count: int
) -> None:
    query = text(f"SELECT ns FROM unnest(CAST(:names AS text[])) AS ns WHERE {in_shard('ns')}")
    seen: list[str] = []
    with store.engine.connect() as conn:
        for shard in Shard.all(count):
            in_sql = conn.execute(query, {"names": NAMESPACES, **shard_params(shard)}).scalars()
            in_sql_set = set(in_sql)
            assert in_sql_set == {ns for ns in NAMESPACES if shard.holds(ns)}, shard
            seen += in_sql_set
        everything = conn.execute(query, {"names": NAMESPACES, **shard_params(None)}).scalars()
        assert sorted(everything) == sorted(NAMESPACES)
    assert sorted(seen) == sorted(NAMESPACES)  # every namespace in exactly one shard
    if count == 4:
        assert all(any(s.holds(ns) for ns in NAMESPACES) for s in Shard.all(4))  # none empty


def test_a_namespace_keeps_its_shard() -> None:
    # Pinned: a namespace must not move between shards across machines or releases.
    assert [s for s in Shard.all(4) if s.holds("alice")] == [Shard(3, 4)]
    assert [s for s in Shard.all(4) if s.holds("bob")] == [Shard(1, 4)]


@pytest.mark.parametrize("value", ["0/4", "5/4", "1/0", "two/4", "1/4/2", "", "-1/4", "1/999"])
def test_a_malformed_shard_is_refused_with_the_expected_form(value: str) -> None:
    with pytest.raises(ValueError, match=r"expected i/n"):
        Shard.parse(value)


def test_a_shard_reads_and_prints_as_i_of_n() -> None:
    assert Shard.parse(" 2/4 ") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
