"""Weekly tidy: ``long_term_entries``, the lines of each namespace's ``MEMORY.md``.

Revision ID: 0004
Revises: 0003

One row per long-term entry, keyed by a hash of its normalised text, so every line of
``MEMORY.md`` traces back to the memory ids merged into it and a run can say which
entries entered and which left. ``memory_id`` is the ``long_term`` memory that makes the
entry searchable; it is cleared, never cascaded, when that memory goes.
The run report itself goes to the existing ``runs`` table.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE long_term_entries (
            namespace varchar(100) NOT NULL,
            entry_key varchar(64) NOT NULL,
            text text NOT NULL,
            section varchar(30) NOT NULL,
            memory_ids bigint[] NOT NULL,
            pinned boolean NOT NULL DEFAULT false,
            score double precision NOT NULL,
            first_seen_week date NOT NULL,
            last_seen_week date NOT NULL,
            status varchar(3) NOT NULL CHECK (status IN ('in', 'out')),
            memory_id bigint REFERENCES memories (id) ON DELETE SET NULL,
            updated_at timestamptz NOT NULL,
            CONSTRAINT pk_long_term_entries PRIMARY KEY (namespace, entry_key)
        );
        CREATE INDEX ix_long_term_entries_status ON long_term_entries (namespace, status);
        CREATE INDEX ix_long_term_entries_memory_id ON long_term_entries (memory_id);
        """
    )
