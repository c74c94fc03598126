"""Times in the store lie from 1900 to 2200 (migration 0021): the tables refuse any other, and
the migration brings the ones an older version stored (1 BC, year 10000) into the window,
after which the sync and search of their namespace answer again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from storage.embedding import HashingEmbedder
from storage.retrieval import Retriever
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync
from tests.storage.memory_factory import put
from tests.storage.schema_steps import migrate

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
# What 0001-01-01T00:00:00+01:00 and 9999-12-31T23:59:59-14:00 were stored as.
BC_1 = "0001-01-01 00:00:00+01"
YEAR_10000 = "9999-12-31 23:59:59-14"


@pytest.mark.parametrize("moment", [BC_1, YEAR_10000, "1899-12-31 23:59:59+00"])
def test_the_messages_table_refuses_a_time_outside_the_window(store: Store, moment: str) -> None:
    add_session(store, "s1", "alice", chat(AS_OF - timedelta(hours=1), "hello", "hi"))
    with (
        pytest.raises(IntegrityError, match="chat_messages_ts_in_window"),
        store.engine.begin() as c,
    ):
        c.execute(
            text(
                "INSERT INTO chat_messages (session_id, id, role, speaker, content, ts) "
                "VALUES ('s1', 'bad', 'user', 'u', 'x', CAST(:ts AS timestamptz))"
            ),
            {"ts": moment},
        )


def test_the_migration_brings_stored_times_into_the_window(store: Store) -> None:
    add_session(
        store, "good", "alice", chat(AS_OF - timedelta(hours=2), "the dentist is at 4", "ok")
    )
    add_session(
        store, "poisoned", "alice", chat(AS_OF - timedelta(hours=1), "pack the tent", "yes")
    )
    (memory,) = put(store, "alice", ["a memory dated 1 BC"], AS_OF - timedelta(days=1))
    migrate(store, "0020")
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE chat_messages SET ts = CAST(:ts AS timestamptz) WHERE id = 'm1' "
                 "AND session_id = 'poisoned'"),
            {"ts": BC_1},
        )  # fmt: skip
        conn.execute(
            text("UPDATE memories SET occurred_at = CAST(:ts AS timestamptz) WHERE id = :id"),
            {"ts": YEAR_10000, "id": memory},
        )
    migrate(store, "head")

    with store.engine.connect() as conn:
        ts = conn.execute(
            text("SELECT ts FROM chat_messages WHERE session_id = 'poisoned' AND id = 'm1'")
        ).scalar_one()
        row = conn.execute(
            text("SELECT occurred_at, created_at FROM memories WHERE id = :id"), {"id": memory}
        ).one()
    assert ts == datetime(1900, 1, 1, tzinfo=UTC)
    assert row.occurred_at == row.created_at  # a memory's impossible time: when it was stored
    report = run_sync(store, AS_OF, min_user_messages=1)
    assert report.written.sessions == 2 and report.written.sessions_refused == 0
    hits = Retriever(store.engine, HashingEmbedder(384)).search(
        "alice", "a memory dated", as_of=AS_OF, record_access=False
    )
    assert memory in [h.memory_id for h in hits]
