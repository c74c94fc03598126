"""Create and migrate the schema on purpose (``archivist db upgrade``), never as a side effect."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text

from storage.kernel.errors import StorageError
from storage.kernel.settings import Settings

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPTS = Path(__file__).parent.parent / "migrations"
# Alembic costs a command that only checks the schema 0.12 s of imports: the check reads the
# revision table and the scripts' own ``revision`` / ``down_revision`` lines instead.
_REVISION = re.compile(r'^(down_revision|revision) = "?(\w+)"?$', re.MULTILINE)
HAS_VERSION_TABLE = text("SELECT to_regclass('alembic_version') IS NOT NULL")
CURRENT = text("SELECT version_num FROM alembic_version LIMIT 1")


def _config(settings: Settings) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["embedding_dim"] = settings.embedding.dim
    config.attributes["text_search_config"] = settings.text_search_config
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision this code knows: the one no other script revises."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for script in (_SCRIPTS / "versions").glob("*.py"):
        found: dict[str, str] = dict(_REVISION.findall(script.read_text()))
        if "revision" in found:
            revisions.add(found["revision"])
            revised.add(found.get("down_revision", "None"))
    heads = sorted(revisions - revised)
    if len(heads) != 1:
        raise StorageError(f"expected one head revision in {_SCRIPTS}, found {heads}")
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as conn:
        if not conn.execute(HAS_VERSION_TABLE).scalar():
            return None
        value = conn.execute(CURRENT).scalar()
    return None if value is None else str(value)


def upgrade(engine: Engine, settings: Settings) -> tuple[str | None, str]:
    """Apply every pending migration; returns (revision before, revision after)."""
    from alembic import command

    before = current_revision(engine)
    config = _config(settings)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    return before, head_revision()


def require_current(engine: Engine, settings: Settings) -> None:
    """Fail fast, saying what to run, when the schema is missing or behind."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = "has no Archivist schema" if current is None else f"is at revision {current}"
        raise StorageError(
            f"the database {state}; this code needs revision {head}: run `archivist db upgrade`"
        )
