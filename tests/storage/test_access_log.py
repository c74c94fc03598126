"""The access log keeps one row per search or priming, its hits' ids in rank order
(migration 0020); the migration groups the rows of the old layout (one per hit) by search,
and its downgrade splits them again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.operations import purge
from storage.retrieval import Retriever
from storage.server.engine import Store
from tests.storage.memory_factory import put
from tests.storage.schema_steps import migrate

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _rows(store: Store, sql: str) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def test_a_search_logs_one_row_and_the_migration_regroups_the_old_layout(store: Store) -> None:
    put(store, "alice", [f"lemon recipe number {i}" for i in range(6)], NOW - timedelta(days=1))
    put(store, "alice2", ["lemon recipe of alice2", "another lemon recipe"], NOW)
    r = Retriever(store.engine, HashingEmbedder(384))
    searches = [
        ("alice", "lemon recipe", NOW),
        ("alice2", "lemon recipe", NOW),  # a look-alike namespace at the same moment
        ("alice", "recipe number 3", NOW + timedelta(minutes=1)),
    ]
    returned = [
        (ns, [h.memory_id for h in r.search(ns, q, limit=4, as_of=at)], at)
        for ns, q, at in searches
    ]
    logged = "SELECT namespace, memory_ids, accessed_at FROM memory_access_log ORDER BY id"
    assert _rows(store, logged) == [tuple(row) for row in returned]
    assert all(len(ids) > 1 for _, ids, _ in returned)

    migrate(store, "0019")
    per_hit = "SELECT namespace, memory_id, accessed_at FROM memory_access_log ORDER BY id"
    assert _rows(store, per_hit) == [(ns, i, at) for ns, ids, at in returned for i in ids]

    migrate(store, "head")
    assert _rows(store, logged) == [tuple(row) for row in returned]


def test_a_purge_of_a_session_whose_namespace_is_gone_still_finds_its_searches(
    store: Store,
) -> None:
    kept, gone = put(store, "alice", ["kept note", "archived note"], NOW)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO memory_access_log (namespace, context, accessed_at, memory_ids) "
                "VALUES ('alice', 'both', :at, ARRAY[:kept, :gone]), "
                "('alice', 'kept', :at, ARRAY[:kept])"
            ),
            {"at": NOW, "kept": kept, "gone": gone},
        )

    with Session(store.engine) as session, session.begin():
        counts = purge.purge_session_rows(session, "no-such-session", None, [gone]).counts

    assert counts["memory_access_log"] == 1
    assert _rows(store, "SELECT context FROM memory_access_log") == [("kept",)]
