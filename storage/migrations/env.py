"""Alembic environment: runs on the connection ``storage.server.migrate`` hands it."""

from __future__ import annotations

from alembic import context

from storage.kernel.base import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata)
with context.begin_transaction():
    context.run_migrations()
