"""The three roles on a PostgreSQL server reached over TCP, each proving its own password
(``tcp_settings``: the owner is the server's superuser, the pipeline's and serving's URLs
are those ``archivist db roles`` printed). What each role may do there, and what it may
not; tests/storage/test_row_level_security.py runs the namespace wall on this server too."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from storage.kernel.settings import Settings
from storage.server.engine import Role, open_store
from storage.server.scoped import PIPELINE_ROLE, SERVING_ROLE, open_serving_engine
from tests.helpers import new_key, scoped
from tests.storage.test_row_level_security import _fill, _seen, _walled

# Statements only the owner may run.
OWNERS_ONLY = (
    "CREATE TABLE intruder (id int)",
    "ALTER TABLE memories ADD COLUMN intruder int",
    "DROP TABLE audit_log",
    "SELECT * FROM archivist_scope_key",
    "ALTER TABLE memories DISABLE ROW LEVEL SECURITY",
    "DROP POLICY namespace_scope ON memories",
)


def _url(settings: Settings, role: str) -> str:
    secret = {
        "owner": settings.database_url,
        "pipeline": settings.pipeline.database_url,
        "serving": settings.serving.database_url,
    }[role]
    assert secret is not None
    return secret.get_secret_value()


def test_every_role_logs_in_over_tcp_with_its_own_password(tcp_settings: Settings) -> None:
    for role, user in (
        ("owner", "postgres"),
        ("pipeline", PIPELINE_ROLE),
        ("serving", SERVING_ROLE),
    ):
        engine = create_engine(_url(tcp_settings, role))
        with engine.connect() as conn:
            who = conn.execute(
                text("SELECT current_user, system_user, host(inet_server_addr())")
            ).one()
        engine.dispose()
        assert tuple(who) == (user, f"scram-sha-256:{user}", "127.0.0.1"), role
    pipeline = make_url(_url(tcp_settings, "pipeline"))
    serving = make_url(_url(tcp_settings, "serving"))
    for wrong in (
        serving.set(password=pipeline.password),  # another role's password
        serving._replace(password=None),  # none (set() would keep the one there)
        pipeline.set(password=f"{pipeline.password}x"),
    ):
        engine = create_engine(wrong.render_as_string(hide_password=False))
        with pytest.raises(OperationalError, match="password"):
            engine.connect()
        engine.dispose()


def test_neither_the_pipeline_nor_serving_may_change_the_schema(tcp_settings: Settings) -> None:
    store = open_store(tcp_settings)  # the pipeline's role
    serving = open_serving_engine(tcp_settings)
    with store.engine.connect() as conn:
        index = conn.execute(
            text("SELECT indexname FROM pg_indexes WHERE tablename = 'memories' LIMIT 1")
        ).scalar_one()
    allowed = []
    for engine in (store.engine, serving):
        for statement in (*OWNERS_ONLY, f"DROP INDEX {index}"):
            try:
                with engine.begin() as conn:
                    conn.execute(text(statement))
                allowed.append((engine.url.username, statement))
            except DBAPIError as refused:
                assert "permission denied" in str(refused) or "must be owner" in str(refused)
    assert allowed == []
    owner = open_store(tcp_settings, Role.OWNER).engine
    with owner.begin() as conn:  # the owner may: the same statements are not refused as such
        conn.execute(text(OWNERS_ONLY[0]))
        assert conn.execute(text("SELECT count(*) FROM archivist_scope_key")).scalar() == 1


def test_the_pipeline_crosses_namespaces_and_serving_sees_one_key_s(
    tcp_settings: Settings,
) -> None:
    store = open_store(tcp_settings)
    _fill(store)
    walled = _walled(store)
    with store.engine.connect() as conn:
        every = set(conn.execute(text("SELECT namespace FROM memories")).scalars())
        keys = conn.execute(text("SELECT count(*) FROM api_keys")).scalar()
    serving = open_serving_engine(tcp_settings)
    with serving.begin() as conn:  # no key: nothing; a setting of its own: nothing
        conn.execute(text("SET archivist.namespace = 'ann'"))
        conn.execute(
            text("SELECT set_config('archivist.scope', 'ann/w/' || repeat('0', 64), true)")
        )
        assert _seen(conn, walled) == {}
    with scoped(serving, store, "ann") as conn:
        seen = _seen(conn, walled)
        anna = conn.execute(text("SELECT count(*) FROM memories WHERE namespace = 'anna'"))
        assert anna.scalar() == 0
    with pytest.raises(DBAPIError, match="permission denied"):
        with serving.connect() as conn:
            conn.execute(text("SELECT key_hash FROM api_keys"))
    assert every == {"alice", "alice2", "alice.b", "ann", "anna", "bob"} and keys == 0
    assert seen and all(found <= {"ann", "s-ann"} for found in seen.values()), seen
    assert new_key(store, "ann")  # the pipeline's role may create keys (archivist keys)
