"""Searches count accesses in a narrow table; the flows fold them into ``memories``.

Revision ID: 0016
Revises: 0015

Every search used to update ``access_count`` and ``last_accessed_at`` on each returned
memory: a row of about 2 KB with eleven indexes, HNSW among them. Most such updates could
not stay on the row's page, so each wrote a new row version into every index (an HNSW
insert walks the graph), and the indexes grew with the traffic, not with the memories.

``memory_access_pending`` holds, per accessed memory, the accesses not yet folded: how many
and when the last one was. A search upserts its hits there (narrow rows, one primary key,
room on each page for updates in place); readers that score by access (search, priming,
one memory through the API) add the pending counts to the row's; the queue drain (every
five minutes), the nightly aging and the weekly tidy fold them into ``memories`` first
(``storage.operations.access``), one update per memory for all its accesses since the last fold.

The key is (memory_id, namespace) and the fold joins on both: under row-level security the
serving role writes only rows of its own namespace, and a row naming another namespace's
memory can neither collide with that namespace's rows nor be folded into its memory. The
serving role no longer updates the counters on ``memories``. A memory that leaves takes its
pending row with it (the trigger of migration 0009).
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

ROLE = "archivist_serving"
SCOPE = "current_setting('archivist.namespace', true)"

GONE = """
    CREATE OR REPLACE FUNCTION archivist_memories_gone() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        EXECUTE 'DELETE FROM memory_access_log l USING gone g WHERE l.memory_id = g.id';{pending}
        EXECUTE 'UPDATE episodes e SET memory_id = NULL FROM gone g '
                'WHERE e.memory_id = g.id';
        EXECUTE 'UPDATE long_term_entries t SET memory_id = NULL FROM gone g '
                'WHERE t.memory_id = g.id';
        RETURN NULL;
    END $$
"""
PENDING_GONE = """
        EXECUTE 'DELETE FROM memory_access_pending p USING gone g WHERE p.memory_id = g.id';"""


def upgrade() -> None:
    # fillfactor 50: a hot memory's row is rewritten on its own page (no index entry).
    op.execute(
        """
        CREATE TABLE memory_access_pending (
            memory_id bigint NOT NULL,
            namespace varchar(100) NOT NULL,
            hits integer NOT NULL,
            last_accessed_at timestamptz NOT NULL,
            CONSTRAINT pk_memory_access_pending PRIMARY KEY (memory_id, namespace)
        ) WITH (fillfactor = 50)
        """
    )
    op.execute("ALTER TABLE memory_access_pending ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY namespace_scope ON memory_access_pending TO {ROLE} "
        f"USING (namespace = {SCOPE}) WITH CHECK (namespace = {SCOPE})"
    )
    # DELETE: forgetting one memory (the trigger below) takes its pending row too.
    op.execute(
        f"GRANT SELECT, INSERT, DELETE, UPDATE (hits, last_accessed_at) "
        f"ON memory_access_pending TO {ROLE}"
    )
    op.execute(f"REVOKE UPDATE (access_count, last_accessed_at) ON memories FROM {ROLE}")
    op.execute(GONE.format(pending=PENDING_GONE))


def downgrade() -> None:
    op.execute(
        """
        UPDATE memories m SET access_count = m.access_count + p.hits,
                              last_accessed_at = p.last_accessed_at
        FROM memory_access_pending p WHERE m.id = p.memory_id AND m.namespace = p.namespace
        """
    )
    op.execute(GONE.format(pending=""))
    op.execute(f"GRANT UPDATE (access_count, last_accessed_at) ON memories TO {ROLE}")
    op.execute("DROP TABLE memory_access_pending")
