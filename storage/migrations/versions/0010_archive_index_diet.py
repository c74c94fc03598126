"""Archival's commit no longer feeds an index of archived rows by namespace and time.

Revision ID: 0010
Revises: 0009

Every archived memory gets a row in ``archived_memories``. Its index on
``(namespace, occurred_at)`` took each row at a random place (a file's rows are in id
order, not time order), so a commit of 33,000 rows dirtied pages all over it: dropping it
took archival of a million memories from about 34,000 to 39,000 rows/s. Its readers are
rare and happy with a scan of this narrow table: opt-in deletion (once a night, and only
when enabled), ``forget`` and counts. Lookups by memory id (primary key), by file
(``manifest_id``) and by session stay indexed.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_archived_memories_namespace")


def downgrade() -> None:
    op.execute(
        "CREATE INDEX ix_archived_memories_namespace ON archived_memories (namespace, occurred_at)"
    )
