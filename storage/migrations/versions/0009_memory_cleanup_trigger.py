"""References to a memory are cleared once per DELETE statement, not once per row.

Revision ID: 0009
Revises: 0008

``episodes.memory_id`` (SET NULL), ``memory_access_log.memory_id`` (CASCADE) and
``long_term_entries.memory_id`` (SET NULL) were foreign keys to ``memories``. PostgreSQL
runs a foreign key's delete action as a row trigger: three index probes and three
statements per deleted memory, about half the time archival spent committing a file.

They are replaced by one statement-level trigger that sees every deleted row at once (a
transition table) and does the same three things set-based. It fires for every way a
memory leaves, including cascades from ``chat_sessions``, so no code path has to
remember it. What the foreign keys also did, refuse a row that points at a missing
memory, no writer needs: each takes the id from a row it just wrote or locked in the same
transaction, and the data-quality report counts dangling references.

The statements run through EXECUTE, so each is planned for the number of rows that went
(a single-row delete probes the indexes; a 50,000-row archive commit may hash).
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        DO $$
        DECLARE fk record;
        BEGIN
            FOR fk IN
                SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
                WHERE contype = 'f' AND confrelid = 'memories'::regclass
            LOOP
                EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
            END LOOP;
        END $$;

        CREATE FUNCTION archivist_memories_gone() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            EXECUTE 'DELETE FROM memory_access_log l USING gone g WHERE l.memory_id = g.id';
            EXECUTE 'UPDATE episodes e SET memory_id = NULL FROM gone g '
                    'WHERE e.memory_id = g.id';
            EXECUTE 'UPDATE long_term_entries t SET memory_id = NULL FROM gone g '
                    'WHERE t.memory_id = g.id';
            RETURN NULL;
        END $$;

        CREATE TRIGGER memories_gone AFTER DELETE ON memories
            REFERENCING OLD TABLE AS gone
            FOR EACH STATEMENT EXECUTE FUNCTION archivist_memories_gone();
        """
    )
