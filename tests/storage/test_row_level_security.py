"""The second wall: under the serving role a query without any namespace condition still
returns only the namespace a key scoped its transaction to (migrations 0015 and 0024), and
the serving role cannot scope a transaction any other way."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import SecretStr
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError, ProgrammingError
from sqlalchemy.orm import Session

from storage import queue
from storage.kernel.errors import ConfigurationError
from storage.kernel.records import MessageRecord, SessionRecord
from storage.kernel.settings import Settings
from storage.keys import create_key, key_hash, resolve_key, revoke_key
from storage.operations.access import fold_accesses
from storage.retrieval import Retriever
from storage.server.engine import Store
from storage.server.scoped import PIPELINE_ROLE, SERVING_ROLE, open_serving_engine
from storage.sessions import record_messages, record_session
from tests.helpers import new_key, scoped
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
# Look-alikes: prefixes and suffixes of one another (a case variant cannot be one:
# namespaces are lowercase).
NAMESPACES = ("alice", "alice2", "alice.b", "ann", "anna", "bob")
QUEUE_ROW = (
    "INSERT INTO memory_write_queue (namespace, op, payload, max_attempts, available_at, "
    "created_at, updated_at) VALUES (:ns, 'ADD_MEMORY', '{}', 3, now(), now(), now())"
)


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


def _walled(store: Store) -> list[str]:
    """Every table with a namespace column that the serving role may read."""
    with store.engine.connect() as conn:
        tables = conn.execute(
            text(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = 'public' AND column_name = 'namespace'"
            )
        ).scalars()
        return sorted(
            t
            for t in tables
            if conn.execute(
                text("SELECT has_table_privilege(:role, :t, 'SELECT')"),
                {"role": SERVING_ROLE, "t": t},
            ).scalar_one()
        )


def _seen(conn: Connection, tables: list[str]) -> dict[str, set[str]]:
    """The namespaces each table shows this transaction (tables showing none left out)."""
    seen = {}
    for table in [*tables, "chat_messages"]:
        column = "session_id" if table == "chat_messages" else "namespace"
        found = conn.execute(text(f"SELECT DISTINCT {column} FROM {table}")).scalars().all()
        if found:
            seen[table] = set(found)
    return seen


@pytest.fixture(params=["socket", "tcp"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """Each test twice: on the embedded server over its unix socket, and on a server over TCP
    where every role proves its password (``tcp_settings``: the pipeline's and serving's
    URLs as ``archivist db roles`` printed them; ``store`` is the pipeline's there)."""
    return settings if request.param == "socket" else request.getfixturevalue("tcp_settings")


@pytest.fixture
def serving(settings: Settings, store: Store) -> Engine:
    return open_serving_engine(settings)


def test_an_unfiltered_query_returns_only_the_scoped_namespace(store: Store, serving: Engine):
    _fill(store)
    with scoped(serving, store, "alice") as conn:
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
    walled = _walled(store)
    assert {"memories", "chat_sessions", "audit_log", "document_chunks"} <= set(walled)
    with store.engine.connect() as conn:
        unprotected = conn.execute(
            text(
                "SELECT relname FROM pg_class WHERE relname = ANY(:t) AND NOT relrowsecurity "
                "OR relname = ANY(:t) AND relname NOT IN (SELECT tablename FROM pg_policies "
                "WHERE policyname = 'namespace_scope')"
            ),
            {"t": walled},
        ).all()
        # A policy that trusts anything but the key's scope (the old custom setting).
        trusting = conn.execute(
            text(
                "SELECT tablename, policyname FROM pg_policies WHERE :role = ANY(roles) "
                "AND tablename <> 'chat_messages' "
                "AND (qual NOT LIKE '%archivist_namespace(%' OR qual LIKE '%current_setting%')"
            ),
            {"role": SERVING_ROLE},
        ).all()
    assert unprotected == [] and trusting == []
    with scoped(serving, store, "alice2") as conn:
        seen = _seen(conn, walled)
    assert all(found <= {"alice2", "s-alice2"} for found in seen.values()), seen
    assert {"memories", "chat_sessions", "memory_write_queue", "chat_messages"} <= set(seen)


def test_every_table_with_row_level_security_lets_the_pipeline_through(store: Store):
    with store.engine.connect() as conn:
        missing = conn.execute(
            text(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relrowsecurity AND NOT EXISTS ("
                "  SELECT FROM pg_policies p WHERE p.tablename = c.relname "
                "  AND p.policyname = 'pipeline_all' AND :role = ANY(p.roles))"
            ),
            {"role": PIPELINE_ROLE},
        ).all()
    assert missing == []


def test_without_a_scope_the_serving_role_sees_nothing(store: Store, serving: Engine):
    _fill(store)
    with serving.connect() as conn:
        assert _seen(conn, _walled(store)) == {}


def test_a_namespace_set_by_hand_shows_nothing(store: Store, serving: Engine):
    """``SET`` / ``set_config`` of the old setting or of the scope itself: 0 rows in every
    namespace table, whatever the value, even a tag taken from a real scope."""
    _fill(store)
    walled = _walled(store)
    with scoped(serving, store, "ann") as conn:
        token = conn.execute(text("SELECT current_setting('archivist.scope')")).scalar_one()
    namespace, mode, tag = token.split("/")
    assert (namespace, mode) == ("ann", "r")
    forged = [
        "anna/r/" + tag,  # another namespace with ann's tag
        "ann/w/" + tag,  # a write scope with a read scope's tag
        "bob/r/" + "0" * 64,
        "bob/r/",
        "bob",
        token,  # ann's own token, outside the transaction it was made for
    ]
    for value in forged:
        for statement in (
            "SELECT set_config('archivist.scope', :value, false)",
            "SELECT set_config('archivist.scope', :value, true)",
        ):
            with serving.begin() as conn:
                conn.execute(text(statement), {"value": value})
                assert _seen(conn, walled) == {}, value
            with serving.connect() as conn:
                conn.execute(text("RESET archivist.scope"))
    with serving.begin() as conn:
        conn.execute(text("SET archivist.namespace = 'bob'"))
        conn.execute(text("SELECT set_config('archivist.namespace', 'anna', true)"))
        assert _seen(conn, walled) == {}


def test_a_scope_copied_to_another_connection_shows_nothing(store: Store, serving: Engine):
    _fill(store)
    key = new_key(store, "anna")
    with serving.connect() as one, serving.connect() as other:
        assert one.connection.dbapi_connection is not other.connection.dbapi_connection
        with one.begin(), other.begin():
            resolve_key(one, key)
            token = one.execute(text("SELECT current_setting('archivist.scope')")).scalar_one()
            other.execute(text("SELECT set_config('archivist.scope', :t, true)"), {"t": token})
            assert one.execute(text("SELECT count(*) FROM memories")).scalar() == 1
            assert other.execute(text("SELECT count(*) FROM memories")).scalar() == 0


def test_a_connection_with_one_key_reads_no_other_namespace(store: Store, serving: Engine):
    """A compromised serving connection holding ann's key: whatever it runs, it reads ann's
    rows and no look-alike's."""
    ids = _fill(store)
    walled = _walled(store)
    key = new_key(store, "ann")
    with serving.begin() as conn:
        assert resolve_key(conn, key, write=True) is not None
        assert resolve_key(conn, key + "x") is None  # a wrong key drops the scope
        assert _seen(conn, walled) == {}
        grant = resolve_key(conn, key, write=True)
        assert grant is not None and grant.namespace == "ann"
        token = conn.execute(text("SELECT current_setting('archivist.scope')")).scalar_one()
        conn.execute(
            text("SELECT set_config('archivist.scope', :t, true)"),
            {"t": token.replace("ann/", "anna/", 1)},
        )
        assert _seen(conn, walled) == {}
        resolve_key(conn, key)
        seen = _seen(conn, walled)
        anna = conn.execute(
            text("SELECT count(*) FROM memories WHERE id = ANY(:ids)"),
            {"ids": ids["anna"] + ids["bob"]},
        ).scalar()
    assert all(found <= {"ann", "s-ann"} for found in seen.values()) and anna == 0
    for private in ("SELECT * FROM archivist_scope_key", "SELECT key_hash FROM api_keys"):
        with pytest.raises(DBAPIError, match="permission denied"), serving.connect() as conn:
            conn.execute(text(private))
    with pytest.raises(DBAPIError, match="permission denied"), serving.connect() as conn:
        conn.execute(text("SELECT archivist_scope_tag('anna', 'r')"))


def test_writes_need_a_key_that_may_write(store: Store, serving: Engine):
    ids = _fill(store)
    reader = new_key(store, "ann", read_only=True)
    writer = new_key(store, "ann")
    for key, write in ((reader, True), (writer, False)):  # no write scope either way
        with pytest.raises(ProgrammingError, match="row-level security"):
            with serving.begin() as conn:
                resolve_key(conn, key, write=write)
                conn.execute(text(QUEUE_ROW), {"ns": "ann"})
        with serving.begin() as conn:
            resolve_key(conn, key, write=write)
            pinned = conn.execute(text("UPDATE memories SET pinned = true")).rowcount
            deleted = conn.execute(text("DELETE FROM memories")).rowcount
            assert (pinned, deleted) == (0, 0)
    with serving.begin() as conn:
        resolve_key(conn, writer, write=True)
        conn.execute(text(QUEUE_ROW), {"ns": "ann"})
        assert conn.execute(text("UPDATE memories SET pinned = true")).rowcount == 1
    with store.engine.connect() as conn:
        pinned_ids = conn.execute(text("SELECT id FROM memories WHERE pinned")).scalars().all()
    assert pinned_ids == ids["ann"]


def test_a_revoked_key_scopes_nothing(store: Store, serving: Engine):
    _fill(store)
    with Session(store.engine) as session, session.begin():
        key_id, key = create_key(session, "alice")
        revoke_key(session, key_id, AT)
    with serving.begin() as conn:
        assert resolve_key(conn, key) is None
        row = conn.execute(
            text("SELECT revoked FROM archivist_scope(:h)"), {"h": key_hash(key)}
        ).one()
        assert row.revoked is True
        assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 0


def test_the_scope_ends_with_its_transaction(store: Store, serving: Engine):
    _fill(store)
    with scoped(serving, store, "bob") as conn:
        assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 1
    with serving.begin() as conn:  # the pool hands back the same connection
        assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 0


def test_the_serving_role_cannot_write_into_another_namespace(store: Store, serving: Engine):
    ids = _fill(store)
    with pytest.raises(ProgrammingError, match="row-level security"):
        with scoped(serving, store, "alice", write=True) as conn:
            conn.execute(text(QUEUE_ROW), {"ns": "bob"})
    with scoped(serving, store, "alice", write=True) as conn:
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
        with scoped(retriever.engine, store, ns) as conn:
            hits = retriever.search(ns, "when is the dentist?", as_of=AT, conn=conn)
        assert [h.namespace for h in hits] == [ns]
    with scoped(retriever.engine, store, "ann") as conn:  # a look-alike's name: nothing
        assert retriever.search("anna", "when is the dentist?", as_of=AT, conn=conn) == []
    assert retriever.search("ann", "when is the dentist?", as_of=AT) == []  # no key: nothing
    with scoped(retriever.engine, store, "alice2") as conn:
        priming = retriever.prime("alice2", "the dentist?", as_of=AT, conn=conn)
    assert {h.namespace for h in priming.facts} == {"alice2"}


def test_accesses_are_pending_in_their_namespace_and_folded_there(
    settings: Settings, store: Store, serving: Engine
):
    ids = _fill(store)
    retriever = Retriever.from_settings(settings, serving=True)
    with scoped(serving, store, "alice") as conn:
        hits = retriever.search("alice", "dentist", as_of=AT, conn=conn)
    assert [h.memory_id for h in hits] == ids["alice"]
    with store.engine.connect() as conn:
        pending = conn.execute(text("SELECT memory_id, namespace, hits FROM memory_access_pending"))
        assert [tuple(row) for row in pending] == [(ids["alice"][0], "alice", 1)]
    with pytest.raises(ProgrammingError, match="row-level security"):
        with scoped(serving, store, "alice") as conn:  # a look-alike namespace's row
            conn.execute(
                text("INSERT INTO memory_access_pending VALUES (:id, 'alice2', 1, now())"),
                {"id": ids["alice2"][0]},
            )
    with pytest.raises(ProgrammingError, match="permission denied"):
        with scoped(serving, store, "alice", write=True) as conn:  # the fold's counters
            conn.execute(text("UPDATE memories SET access_count = 100"))
    with scoped(serving, store, "alice") as conn:  # a row of its own naming bob's memory
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
    assert counts == dict.fromkeys(NAMESPACES, 0) | {"alice": 1} and left == 0


def _serving_as(settings: Settings, url: str) -> Settings:
    serving = settings.serving.model_copy(update={"database_url": SecretStr(url)})
    return settings.model_copy(update={"serving": serving})


def test_a_serving_url_that_bypasses_the_policies_is_refused(settings: Settings):
    assert settings.database_url is not None
    with pytest.raises(ConfigurationError, match="bypasses row-level security"):
        open_serving_engine(_serving_as(settings, settings.database_url.get_secret_value()))


def test_a_serving_url_of_the_pipeline_role_is_refused(settings: Settings, store: Store):
    assert settings.database_url is not None
    url = store.engine.url.set(username=PIPELINE_ROLE).render_as_string(hide_password=False)
    with pytest.raises(ConfigurationError, match="logs in as 'archivist_pipeline'"):
        open_serving_engine(_serving_as(settings, url))


DOCUMENT_ROW = (
    "INSERT INTO documents (namespace, uri, title, format, content_hash, size, text, "
    "chunk_size, overlap, ingested_at, updated_at) VALUES "
    "(:ns, 'upload:plan.md', 'Plan', 'markdown', 'h', 1, 'the plan', 100, 0, now(), now())"
)


def test_documents_are_deleted_only_under_a_write_scope(store: Store, serving: Engine):
    with store.engine.begin() as conn:
        for ns in ("ann", "anna"):
            conn.execute(text(DOCUMENT_ROW), {"ns": ns})
    reader = new_key(store, "ann", read_only=True)
    writer = new_key(store, "ann")
    for key, write in ((reader, True), (writer, False)):  # no write scope either way
        with serving.begin() as conn:
            resolve_key(conn, key, write=write)
            assert conn.execute(text("SELECT count(*) FROM documents")).scalar() == 1
            assert conn.execute(text("DELETE FROM documents")).rowcount == 0
    with serving.begin() as conn:
        resolve_key(conn, writer, write=True)
        assert conn.execute(text("DELETE FROM documents")).rowcount == 1
    with store.engine.connect() as conn:
        left = conn.execute(text("SELECT namespace FROM documents")).scalars().all()
    assert left == ["anna"]


ACCESS_TABLES = {"memory_access_log", "memory_access_pending"}  # a search's own records


def test_every_table_the_serving_role_changes_needs_a_write_scope(store: Store):
    """Beyond the accesses a search records (and the audit, which only grows), a table the
    serving role may update or delete in is changed only under a write scope."""
    with store.engine.connect() as conn:
        changeable = set(
            conn.execute(
                text(
                    "SELECT c.relname FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'public' AND c.relkind = 'r' AND ("
                    "  has_table_privilege(:role, c.oid, 'UPDATE, DELETE')"
                    "  OR has_any_column_privilege(:role, c.oid, 'UPDATE'))"
                ),
                {"role": SERVING_ROLE},
            ).scalars()
        )
        ungated = conn.execute(
            text(
                "SELECT tablename, policyname FROM pg_policies WHERE :role = ANY(roles) "
                "AND cmd IN ('ALL', 'UPDATE', 'DELETE') AND tablename = ANY(:tables) "
                "AND qual NOT LIKE '%archivist_namespace(true)%'"
            ),
            {"role": SERVING_ROLE, "tables": sorted(changeable - ACCESS_TABLES)},
        ).all()
    assert {"documents", "document_chunks", "memories", "memory_write_queue"} <= changeable
    assert ungated == []
