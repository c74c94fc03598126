"""The second wall: under the serving role a query without any namespace condition still
returns only the namespace its transaction is scoped to (migration 0015)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, ProgrammingError
from sqlalchemy.orm import Session

from storage import queue
from storage.kernel.errors import ConfigurationError
from storage.kernel.records import MessageRecord, SessionRecord
from storage.kernel.settings import Settings
from storage.keys import create_key, resolve_key
from storage.operations.access import fold_accesses
from storage.retrieval import Retriever
from storage.server.engine import Store
from storage.server.scoped import SERVING_ROLE, open_serving_engine, scope
from storage.sessions import record_messages, record_session
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
# Look-alikes: a prefix and suffixes of the scoped namespace (a case variant cannot be one:
# namespaces are lowercase).
NAMESPACES = ("alice", "alice2", "alice.b", "bob")


def _fill(store: Store) -> dict[str, list[int]]:
    ids = {}
    with Session(store.engine) as session, session.begin():
        for ns in NAMESPACES:
            record_session(session, SessionRecord(id=f"s-{ns}", namespace=ns, agent="test"))
            message = MessageRecord(
                id="m1", role="user", speaker="u", content=f"secret of {ns}", timestamp=AT
            )
            record_messages(session, f"s-{ns}", [message])
            queue.enqueue(session, ns, "ADD_MEMORY", {"content": f"note of {ns}"})
    for ns in NAMESPACES:
        ids[ns] = put(store, ns, [f"the dentist of {ns} is on Friday"], AT)
    return ids


@pytest.fixture
def serving(settings: Settings, store: Store) -> Engine:
    return open_serving_engine(settings)


def test_an_unfiltered_query_returns_only_the_scoped_namespace(store: Store, serving: Engine):
    _fill(store)
    with serving.begin() as conn:
        scope(conn, "alice")
        memories = conn.execute(text("SELECT namespace, content FROM memories")).all()
        messages = conn.execute(text("SELECT content FROM chat_messages")).scalars().all()
        queued = conn.execute(text("SELECT namespace FROM memory_write_queue")).scalars().all()
    assert [tuple(row) for row in memories] == [("alice", "the dentist of alice is on Friday")]
    assert messages == ["secret of alice"]
    assert queued == ["alice"]
    with store.engine.connect() as conn:  # the owner still sees everything
        assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == len(NAMESPACES)


def test_every_table_with_namespace_data_is_walled(store: Store, serving: Engine):
    _fill(store)
    with store.engine.connect() as conn:
        tables = conn.execute(
            text(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = 'public' AND column_name = 'namespace'"
            )
        ).scalars()
        # Tables the serving role has no right on at all (api_keys, pseudonym_keys...) need
        # no wall.
        walled = {
            t
            for t in tables
            if conn.execute(
                text("SELECT has_table_privilege('archivist_serving', :t, 'SELECT')"), {"t": t}
            ).scalar_one()
        }
        assert {"memories", "chat_sessions", "audit_log"} <= walled
        unprotected = conn.execute(
            text(
                "SELECT relname FROM pg_class WHERE relname = ANY(:t) AND NOT relrowsecurity "
                "OR relname = ANY(:t) AND relname NOT IN (SELECT tablename FROM pg_policies)"
            ),
            {"t": sorted(walled)},
        ).all()
    assert unprotected == []
    with serving.begin() as conn:
        scope(conn, "alice2")
        for table in sorted(walled):
            seen = conn.execute(text(f"SELECT DISTINCT namespace FROM {table}")).scalars().all()
            assert set(seen) <= {"alice2"}, table


def test_without_a_scope_the_serving_role_sees_nothing(store: Store, serving: Engine):
    _fill(store)
    with serving.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM chat_messages")).scalar() == 0


def test_the_scope_ends_with_its_transaction(store: Store, serving: Engine):
    _fill(store)
    with serving.begin() as conn:
        scope(conn, "bob")
    with serving.begin() as conn:  # the pool hands back the same connection
        assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 0


def test_the_serving_role_cannot_write_into_another_namespace(store: Store, serving: Engine):
    ids = _fill(store)
    with pytest.raises(ProgrammingError, match="row-level security"):
        with serving.begin() as conn:
            scope(conn, "alice")
            conn.execute(
                text(
                    "INSERT INTO memory_write_queue (namespace, op, payload) "
                    "VALUES ('bob', 'ADD_MEMORY', '{}')"
                )
            )
    with serving.begin() as conn:
        scope(conn, "alice")
        pinned = conn.execute(
            text("UPDATE memories SET pinned = true WHERE id = :id"), {"id": ids["bob"][0]}
        )
        deleted = conn.execute(text("DELETE FROM memories WHERE namespace <> 'alice'"))
        assert (pinned.rowcount, deleted.rowcount) == (0, 0)
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memories WHERE pinned")).scalar() == 0


def test_the_serving_role_resolves_a_key_but_cannot_read_the_keys(store: Store, serving: Engine):
    with Session(store.engine) as session, session.begin():
        key_id, key = create_key(session, "alice", read_only=True)
    with serving.begin() as conn:
        grant = resolve_key(conn, key)
        assert grant is not None
        assert (grant.key_id, grant.namespace, grant.read_only) == (key_id, "alice", True)
        assert resolve_key(conn, key + "x") is None
    with pytest.raises(DBAPIError, match="permission denied"):
        with serving.connect() as conn:
            conn.execute(text("SELECT key_hash FROM api_keys"))


def test_search_through_the_serving_role_keeps_to_its_namespace(settings: Settings, store: Store):
    _fill(store)
    retriever = Retriever.from_settings(settings, serving=True)
    with retriever.engine.connect() as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == SERVING_ROLE
    for ns in NAMESPACES:
        hits = retriever.search(ns, "when is the dentist?", as_of=AT)
        assert [h.namespace for h in hits] == [ns]
    priming = retriever.prime("alice2", "the dentist?", as_of=AT)
    assert {h.namespace for h in priming.facts} == {"alice2"}


def test_accesses_are_pending_in_their_namespace_and_folded_there(
    settings: Settings, store: Store, serving: Engine
):
    ids = _fill(store)
    retriever = Retriever.from_settings(settings, serving=True)
    assert [h.memory_id for h in retriever.search("alice", "dentist", as_of=AT)] == ids["alice"]
    with store.engine.connect() as conn:
        pending = conn.execute(text("SELECT memory_id, namespace, hits FROM memory_access_pending"))
        assert [tuple(row) for row in pending] == [(ids["alice"][0], "alice", 1)]
    with pytest.raises(ProgrammingError, match="row-level security"):
        with serving.begin() as conn:  # a look-alike namespace's row
            scope(conn, "alice")
            conn.execute(
                text("INSERT INTO memory_access_pending VALUES (:id, 'alice2', 1, now())"),
                {"id": ids["alice2"][0]},
            )
    with pytest.raises(ProgrammingError, match="permission denied"):
        with serving.begin() as conn:  # the counters on the memory belong to the fold
            scope(conn, "alice")
            conn.execute(text("UPDATE memories SET access_count = 100"))
    with serving.begin() as conn:  # a row of its own namespace naming bob's memory
        scope(conn, "alice")
        conn.execute(
            text("INSERT INTO memory_access_pending VALUES (:id, 'alice', 50, now())"),
            {"id": ids["bob"][0]},
        )
    with Session(store.engine) as session, session.begin():
        folded = fold_accesses(session)
    assert (folded.rows, folded.memories, folded.accesses) == (2, 1, 1)
    with store.engine.connect() as conn:
        counts = dict(
            conn.execute(text("SELECT namespace, access_count FROM memories")).tuples().all()
        )
        left = conn.execute(text("SELECT count(*) FROM memory_access_pending")).scalar()
    assert counts == {"alice": 1, "alice2": 0, "alice.b": 0, "bob": 0} and left == 0


def test_a_serving_url_that_bypasses_the_policies_is_refused(settings: Settings):
    assert settings.database_url is not None
    owner = settings.model_copy(
        update={
            "serving": settings.serving.model_copy(update={"database_url": settings.database_url})
        }
    )
    with pytest.raises(ConfigurationError, match="bypasses row-level security"):
        open_serving_engine(owner)
