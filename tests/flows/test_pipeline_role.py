"""The flows as a worker runs them with ``ARCHIVIST_PIPELINE__DATABASE_URL`` alone: logged in
as ``archivist_pipeline`` (migration 0024), which reads and writes every namespace but owns
nothing, with no owner's URL in the process."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from flows.aging import memory_aging
from flows.daily_sync import memory_sync_daily
from flows.forget import memory_forget
from flows.queue_drain import memory_queue_drain
from flows.weekly_tidy import memory_weekly_tidy
from storage import queue
from storage.kernel.settings import Settings
from storage.server.engine import Role, Store, open_store, resolve_url
from storage.server.scoped import PIPELINE_ROLE
from tests.helpers import add_session, chat

SUNDAY = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)


@pytest.fixture
def pipeline_url(store: Store) -> str:
    return store.engine.url.set(username=PIPELINE_ROLE).render_as_string(hide_password=False)


@pytest.fixture
def pipeline_env(
    flow_env: Settings, pipeline_url: str, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """A worker's environment: the pipeline's URL, and no owner's."""
    monkeypatch.delenv("ARCHIVIST_DATABASE_URL")
    monkeypatch.setenv("ARCHIVIST_PIPELINE__DATABASE_URL", pipeline_url)
    return flow_env


def test_the_flows_run_as_the_pipeline_role_alone(pipeline_env: Settings, store: Store) -> None:
    settings = Settings()
    assert settings.database_url is None
    with open_store(settings).engine.connect() as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == PIPELINE_ROLE
    for n, namespace in enumerate(("alice", "bob")):
        day = SUNDAY - timedelta(days=3, hours=n)
        lines = ("I need help with the Lisbon flights.", "Sure.", "Let's book the first one.")
        add_session(store, f"s-{namespace}", namespace, chat(day, *lines))
    with Session(store.engine) as session, session.begin():
        queue.enqueue(session, "alice", "ADD_MEMORY", {"content": "Likes aisle seats."}, now=SUNDAY)

    synced = [memory_sync_daily(as_of=SUNDAY - timedelta(days=2 - d)) for d in range(3)]
    drained = memory_queue_drain(as_of=SUNDAY, worker="pipeline-test")
    tidied = memory_weekly_tidy(as_of=SUNDAY)
    aged = memory_aging(as_of=SUNDAY + timedelta(days=400))
    forgotten = memory_forget("bob", confirm=True)

    assert sum(r.written.sessions for r in synced) == 2 and drained.drained.completed == 1
    assert tidied.namespaces and aged.archival.rows_archived > 0
    with store.engine.connect() as conn:
        left = conn.execute(
            # The audit log keeps the forget's own record, as every forget does.
            text(
                "SELECT table_name FROM archivist_namespace_rows('bob') "
                "WHERE n > 0 AND table_name <> 'audit_log'"
            )
        ).all()
        runs = conn.execute(text("SELECT count(*) FROM runs WHERE status = 'completed'")).scalar()
    assert left == [] and forgotten.rows and runs
    assert not (settings.data_dir / "pgdata").exists()  # no process started a server of its own


def test_the_pipeline_role_changes_rows_not_the_schema(store: Store, pipeline_url: str) -> None:
    engine = create_engine(pipeline_url)
    refused = [
        "CREATE INDEX ix_test ON memories (created_at)",
        "ALTER TABLE memories ADD COLUMN x int",
        "DROP TABLE audit_log",
        "SELECT * FROM archivist_scope_key",
        "SET ROLE postgres",
        "ALTER SYSTEM SET work_mem = '1GB'",
    ]
    try:
        for statement in refused:
            with pytest.raises(DBAPIError, match="permission denied|must be owner"):
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.execute(text(statement))
        with engine.begin() as conn:  # what the erasure's scrub does, by MAINTAIN
            conn.execute(text("ANALYZE memories"))
    finally:
        engine.dispose()


def test_each_role_resolves_its_own_url(settings: Settings, pipeline_url: str) -> None:
    from pydantic import SecretStr

    pipeline = settings.pipeline.model_copy(update={"database_url": SecretStr(pipeline_url)})
    both = settings.model_copy(update={"pipeline": pipeline})
    assert settings.database_url is not None
    owner = settings.database_url.get_secret_value()
    assert resolve_url(both, Role.PIPELINE) == pipeline_url
    assert resolve_url(both, Role.OWNER) == owner
    assert resolve_url(settings, Role.PIPELINE) == owner  # no pipeline URL: the owner's
