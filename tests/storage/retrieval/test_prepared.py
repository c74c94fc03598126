"""A search's statements are prepared once per connection and run with generic plans:
the same hits as statements planned for their values, and no planning per search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from storage.server.scoped import scope
from tasks.ann_index import refresh_ann_index
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
# (namespace, query, filters): HNSW walks (one with a filter that leaves 12 of 1,512
# indexed rows), a walk that finds nothing and its exact re-run (no indexed preference),
# the exact scan of a small namespace, and time ranges that leave some rows.
SEARCHES: list[tuple[str, str, dict[str, Any]]] = [
    ("big", "atlas budget", {}),
    ("big", "budget overview", {"options": SearchOptions(kinds=["decision"])}),
    ("small", "atlas", {}),
    ("big", "atlas preference", {"options": SearchOptions(kinds=["preference"])}),
    ("small", "atlas note", {"options": SearchOptions(time_range=(NOW - DAY, NOW + DAY))}),
    (
        "big",
        "ship atlas",
        {"options": SearchOptions(time_range=(NOW - 2 * DAY, NOW + DAY)), "limit": 20},
    ),
]
WALKS = 4  # the searches of "big": each walks the index once


def _fill(store: Store) -> None:
    big = [f"note {i} about project atlas budget item {i % 37}" for i in range(1500)]
    put(store, "big", big, NOW - 3 * DAY)
    decisions = [f"decision {i}: ship atlas on day {i}" for i in range(12)]
    put(store, "big", decisions, NOW, kind="decision")
    put(store, "small", [f"small note {i} about atlas" for i in range(12)], NOW - 2 * DAY)
    put(store, "small", ["a newer atlas note"], NOW)
    assert refresh_ann_index(store.engine, min_rows=1000) == {"big": 1512}
    put(
        store, "big", ["prefers atlas reports on paper", "prefers mornings"], NOW, kind="preference"
    )


def _retriever(store: Store, *, prepared: bool) -> Retriever:
    settings = RetrievalSettings(min_cosine=-1.0, prepared_statements=prepared)
    return Retriever(store.engine, HashingEmbedder(384), settings, store.settings.tz)


def _search_all(r: Retriever, conn: Connection) -> list[list[tuple[tuple[str, int], float]]]:
    found = []
    for namespace, query, filters in SEARCHES:
        with conn.begin():
            scope(conn, namespace, relaxed=True)  # the caller's transaction, bound by it
            hits = r.search(namespace, query, as_of=NOW, conn=conn, **filters)
        found.append([(h.ref, h.score) for h in hits])
    return found


def _prepared(conn: Connection) -> list[Any]:
    query = "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
    return list(conn.execute(text(query)).all())


def test_prepared_statements_change_no_hit(store: Store) -> None:
    _fill(store)
    with store.engine.connect() as conn:
        planned = _search_all(_retriever(store, prepared=False), conn)
        assert _prepared(conn) == []  # turned off: nothing prepared
    with store.engine.connect() as conn:
        first = _search_all(_retriever(store, prepared=True), conn)
        again = _search_all(_retriever(store, prepared=True), conn)  # reusing the plans

    assert [len(hits) for hits in planned] == [10, 10, 10, 2, 1, 14]
    for hits in (first, again):
        assert [[i for i, _ in h] for h in hits] == [[i for i, _ in h] for h in planned]
        for got, want in zip(hits, planned, strict=True):
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


def test_each_statement_is_planned_once_per_connection(store: Store) -> None:
    _fill(store)
    with store.engine.connect() as conn:
        _search_all(_retriever(store, prepared=True), conn)
        prepared = _prepared(conn)

    candidates = [p for p in prepared if "WITH dense_ann" in p.statement]
    assert sum(p.generic_plans for p in candidates) == len(SEARCHES)
    walks = [p for p in prepared if "ORDER BY embedding <=>" in p.statement]
    # A walk is planned for its namespace (which picks the namespace's own HNSW index), and
    # the exact re-run of the walk that found nothing is planned afresh, under the exact
    # settings: were it the prepared walk, it would be planned once more here.
    assert sum(p.custom_plans for p in walks) == WALKS
    assert all(p.generic_plans == 0 for p in walks)
    assert all(p.custom_plans == 0 for p in candidates)
    recorded = [p for p in prepared if "INSERT INTO memory_access_log" in p.statement]
    assert sum(p.generic_plans + p.custom_plans for p in recorded) == len(SEARCHES)
