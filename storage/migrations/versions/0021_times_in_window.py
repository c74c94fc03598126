"""Times the store holds lie from 1900-01-01 to 2200-01-01, checked by the tables themselves.

Revision ID: 0021
Revises: 0020

Before ``storage.kernel.inputs`` gave every door one gate for times, a message at
``0001-01-01T00:00:00+01:00`` was stored as 1 BC: PostgreSQL takes it, Python cannot read
it, and every later sync over its session and every search of its namespace failed. This
migration brings such times into the window (a memory's ``occurred_at`` becomes its
``created_at``, the time it was stored; any other time its nearest edge), logging how many
rows it changed, and then adds ``CHECK`` constraints, so a writer that goes around the
gates (an application writing the messages table, say) is refused at its own ``INSERT``
instead of poisoning later reads. The gates are narrower (a time something happened may be
at most a day ahead of now); the constraints hold what no part of the stack can misread.
"""

from __future__ import annotations

import logging

from alembic import op
from sqlalchemy import text

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

EARLIEST = "timestamptz '1900-01-01 00:00:00+00'"
LATEST = "timestamptz '2200-01-01 00:00:00+00'"

# (table, column, what an out-of-window value becomes)
COLUMNS = (
    ("chat_messages", "ts", None),
    ("memories", "created_at", None),
    ("memories", "occurred_at", "created_at"),
    ("episodes", "started_at", None),
    ("episodes", "ended_at", None),
    ("processed_sessions", "last_message_at", None),
    ("archived_memories", "occurred_at", None),
)


def _outside(column: str) -> str:
    return f"({column} < {EARLIEST} OR {column} > {LATEST})"


def upgrade() -> None:
    log = logging.getLogger("alembic.runtime.migration")
    bind = op.get_bind()
    for table, column, fallback in COLUMNS:
        edge = f"least(greatest({column}, {EARLIEST}), {LATEST})"
        value = edge if fallback is None else f"least(greatest({fallback}, {EARLIEST}), {LATEST})"
        changed = bind.execute(
            text(f"UPDATE {table} SET {column} = {value} WHERE {_outside(column)}")
        ).rowcount
        if changed:
            log.warning(
                "%s.%s: %d times outside 1900..2200 brought into it", table, column, changed
            )
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_{column}_in_window "
            f"CHECK ({column} >= {EARLIEST} AND {column} <= {LATEST})"
        )


def downgrade() -> None:
    for table, column, _ in COLUMNS:
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_{column}_in_window")
