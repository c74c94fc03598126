"""The access log keeps a window, counted by day beyond it; a key for the ids tenants see.

Revision ID: 0025
Revises: 0024

``memory_access_log`` grew by one row per search and priming for good, each with its
context (the query's first 500 characters) and the ids it returned. ``memory-aging`` now
deletes the rows older than ``ARCHIVIST_AGING__ACCESS_LOG_DAYS`` and adds them first to
``memory_access_daily``: per namespace and day (in ``ARCHIVIST_TIMEZONE``), how many
searches and primings there were and how many memories they returned. No query text and
no memory id outlives the window. The counts that scoring reads (``memories``'
``access_count`` and ``last_accessed_at``, ``memory_access_pending``) never came from the
log and stay as they are. The serving role gets no right on the new table; the pipeline
gets its rights by the default privileges of migration 0024, and ``forget`` deletes a
namespace's rows as it does every table's with a ``namespace`` column.

``archivist_public_ids`` holds one random key, with which the API and the MCP server turn
every id they show a tenant (memories, queue items, documents, chunks) into an opaque one
and back (``storage.public_ids``): ids come from sequences shared by every namespace, so
the gaps between a tenant's own ids told it how much the others wrote. The serving role
reads the key (it shows and takes those ids); it does not make the serving role see more.
"""

from __future__ import annotations

import secrets

from alembic import op
from sqlalchemy import text

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

SERVING = "archivist_serving"


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memory_access_daily (
            namespace varchar(100) NOT NULL,
            day date NOT NULL,
            searches bigint NOT NULL DEFAULT 0,
            primings bigint NOT NULL DEFAULT 0,
            hits bigint NOT NULL DEFAULT 0,
            CONSTRAINT pk_memory_access_daily PRIMARY KEY (namespace, day)
        );
        CREATE INDEX ix_memory_access_log_accessed_at ON memory_access_log (accessed_at);
        CREATE TABLE archivist_public_ids (
            id boolean PRIMARY KEY DEFAULT true CHECK (id),
            key bytea NOT NULL
        );
        """
    )
    op.get_bind().execute(
        text("INSERT INTO archivist_public_ids (key) VALUES (:key)"),
        {"key": secrets.token_bytes(32)},
    )
    op.execute(f"GRANT SELECT ON archivist_public_ids TO {SERVING}")


def downgrade() -> None:
    op.execute(
        """
        DROP TABLE archivist_public_ids;
        DROP INDEX ix_memory_access_log_accessed_at;
        DROP TABLE memory_access_daily;
        """
    )
