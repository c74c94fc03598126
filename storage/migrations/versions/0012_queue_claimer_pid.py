"""A queue claim records the claiming backend's pid, so a dead worker's claims come back fast.

Revision ID: 0012
Revises: 0011

A drainer keeps the connection it claimed on until the claimed items are completed or
failed. When its process dies, PostgreSQL ends that backend, and its pid leaves
``pg_stat_activity``; a claim whose ``claimer_pid`` is no longer there is reclaimed on
the next claim instead of after ``stuck_after_seconds``. Items claimed before this
migration have no pid and wait for the stuck timeout, as before.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE memory_write_queue ADD COLUMN claimer_pid integer")


def downgrade() -> None:
    op.execute("ALTER TABLE memory_write_queue DROP COLUMN claimer_pid")
