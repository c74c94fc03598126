"""Moving a test's database along the migrations: down to a revision, or up to head."""

from __future__ import annotations

from alembic import command

from storage.server.engine import Store
from storage.server.migrate import _config


def migrate(store: Store, revision: str) -> None:
    """Upgrade ``store`` to ``"head"``, or downgrade it to ``revision`` (``"-1"``: one step)."""
    config = _config(store.settings)
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        if revision == "head":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)
