"""Create and migrate the schema on purpose (``archivist db upgrade``), never as a side effect."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from storage.config import Settings
from storage.errors import StorageError

_SCRIPTS = Path(__file__).parent / "migrations"


def _config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["embedding_dim"] = settings.embedding.dim
    config.attributes["text_search_config"] = settings.text_search_config
    return config


def head_revision(settings: Settings) -> str:
    """The newest revision this code knows."""
    head = ScriptDirectory.from_config(_config(settings)).get_current_head()
    if head is None:
        raise StorageError(f"no migrations found in {_SCRIPTS}")
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, settings: Settings) -> tuple[str | None, str]:
    """Apply every pending migration; returns (revision before, revision after)."""
    before = current_revision(engine)
    config = _config(settings)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    return before, head_revision(settings)


def require_current(engine: Engine, settings: Settings) -> None:
    """Fail fast, saying what to run, when the schema is missing or behind."""
    current, head = current_revision(engine), head_revision(settings)
    if current != head:
        state = "has no Archivist schema" if current is None else f"is at revision {current}"
        raise StorageError(
            f"the database {state}; this code needs revision {head}: run `archivist db upgrade`"
        )
