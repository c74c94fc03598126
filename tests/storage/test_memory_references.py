"""When a memory goes, every reference to it goes with it, whichever way it was deleted.

Episodes and long-term entries keep their row with ``memory_id`` cleared. The access log
is a history of what searches returned (migration 0020): it keeps the ids. References to
other memories are left alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage import memories
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync

DAY = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def rows(store: Store, sql: str) -> list[tuple[Any, Any]]:
    """Two-column query results."""
    with store.engine.connect() as conn:
        return [(r[0], r[1]) for r in conn.execute(text(sql))]


def synced(store: Store, *session_ids: str) -> dict[str, int]:
    """Synced sessions, each with an access-log row and a long-term entry on its episode
    memory; returns each session's episode memory id."""
    for sid in session_ids:
        texts = (f"Plan {sid}: book the Lisbon flight.", "Done.", "And a window seat.", "Sure.")
        add_session(store, sid, "alice", chat(DAY, *texts))
    run_sync(store, DAY.replace(hour=23))
    linked = dict(rows(store, "SELECT session_id, memory_id FROM episodes"))
    with store.engine.begin() as conn:
        for sid, memory_id in linked.items():
            params = {"id": memory_id, "key": sid, "at": DAY}
            conn.execute(
                text(
                    "INSERT INTO memory_access_log (memory_ids, namespace, accessed_at) "
                    "VALUES (ARRAY[:id], 'alice', :at), (ARRAY[:id], 'alice', :at)"
                ),
                params,
            )
            conn.execute(
                text(
                    "INSERT INTO long_term_entries (namespace, entry_key, text, section, "
                    "memory_ids, score, first_seen_week, last_seen_week, status, memory_id, "
                    "updated_at) VALUES ('alice', :key, 'x', 'facts', ARRAY[:id], 1, "
                    "'2026-11-16', '2026-11-16', 'in', :id, :at)"
                ),
                params,
            )
    return {str(k): int(v) for k, v in linked.items()}


def references(store: Store) -> dict[str, object]:
    return {
        "episodes": dict(rows(store, "SELECT session_id, memory_id FROM episodes")),
        "access_log": sorted(
            r[0] for r in rows(store, "SELECT unnest(memory_ids), 0 FROM memory_access_log")
        ),
        "long_term": dict(rows(store, "SELECT entry_key, memory_id FROM long_term_entries")),
    }


def test_deleting_memories_clears_their_references_and_only_theirs(store: Store) -> None:
    linked = synced(store, "a", "b")

    with Session(store.engine) as session, session.begin():
        assert memories.delete_memories(session, [linked["a"]]) == 1

    assert references(store) == {
        "episodes": {"a": None, "b": linked["b"]},
        "access_log": sorted([linked["a"], linked["a"], linked["b"], linked["b"]]),
        "long_term": {"a": None, "b": linked["b"]},
    }


def test_memories_deleted_by_a_session_cascade_lose_their_references(store: Store) -> None:
    linked = synced(store, "a", "b")

    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM chat_sessions WHERE id = 'a'"))

    assert references(store) == {
        "episodes": {"b": linked["b"]},  # session a's episode cascaded with it
        "access_log": sorted([linked["a"], linked["a"], linked["b"], linked["b"]]),
        "long_term": {"a": None, "b": linked["b"]},
    }


def test_a_many_row_delete_clears_every_reference_in_one_statement(store: Store) -> None:
    linked = synced(store, *(f"s{i}" for i in range(30)))

    with store.engine.begin() as conn:
        gone = conn.execute(text("DELETE FROM memories WHERE kind = 'episode'")).rowcount

    assert gone == 30 == len(linked)
    assert references(store) == {
        "episodes": dict.fromkeys(linked),
        "access_log": sorted(2 * list(linked.values())),
        "long_term": dict.fromkeys(linked),
    }
