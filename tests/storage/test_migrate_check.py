"""The schema check without alembic agrees with alembic."""

from __future__ import annotations

from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from storage.kernel.settings import Settings
from storage.server.engine import Store
from storage.server.migrate import _config, current_revision, head_revision


def test_the_head_read_from_the_scripts_is_alembics(settings: Settings) -> None:
    assert head_revision() == ScriptDirectory.from_config(_config(settings)).get_current_head()


def test_the_current_revision_of_a_migrated_and_of_an_empty_database(
    store: Store, pg_url: str
) -> None:
    assert current_revision(store.engine) == head_revision()
    empty = create_engine(pg_url)  # the maintenance database: no Archivist schema
    try:
        assert current_revision(empty) is None
    finally:
        empty.dispose()
