"""The access log keeps one row per search or priming, with the ids it returned.

Revision ID: 0020
Revises: 0019

``memory_access_log`` held one row per returned memory, with an index on ``memory_id``:
ten rows and thirty index entries per search. The ``memory_id`` index takes its inserts
at random pages, so after each checkpoint nearly every insert wrote a full page image:
a search wrote 41 KiB of WAL on a store whose log had reached 9 million rows (5.1 KiB
with one row per search), which set off a checkpoint every few minutes under load and
left the API's latency at the mercy of them. The log grew by one row per hit for good.

Now each search (and each priming) logs one row: its namespace, context and time, and
``memory_ids``, the memories it returned in rank order. It is a history: an id stays in
it when its memory is later compressed, archived or deleted (an id is no content; the
counts that scoring reads live in ``memories`` and ``memory_access_pending``). Forgetting
a namespace deletes its rows, and purging a session deletes the rows that name one of the
session's memories. The rows of the old layout are grouped by search (same namespace,
context and time) in their order; the downgrade splits them again.
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

ROLE = "archivist_serving"

GONE = """
    CREATE OR REPLACE FUNCTION archivist_memories_gone() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN{log}
        EXECUTE 'DELETE FROM memory_access_pending p USING gone g WHERE p.memory_id = g.id';
        EXECUTE 'UPDATE episodes e SET memory_id = NULL FROM gone g '
                'WHERE e.memory_id = g.id';
        EXECUTE 'UPDATE long_term_entries t SET memory_id = NULL FROM gone g '
                'WHERE t.memory_id = g.id';
        RETURN NULL;
    END $$
"""
LOG_GONE = """
        EXECUTE 'DELETE FROM memory_access_log l USING gone g WHERE l.memory_id = g.id';"""


def upgrade() -> None:
    op.execute(GONE.format(log=""))
    op.execute(
        """
        CREATE TEMP TABLE access_log_0020 ON COMMIT DROP AS
        SELECT min(id) AS id, namespace, context, accessed_at,
               array_agg(memory_id ORDER BY id) AS memory_ids
        FROM memory_access_log GROUP BY namespace, context, accessed_at
        """
    )
    op.execute("TRUNCATE memory_access_log")
    op.execute("DROP INDEX ix_memory_access_log_memory_id")
    op.execute("ALTER TABLE memory_access_log DROP COLUMN memory_id")
    op.execute("ALTER TABLE memory_access_log ADD COLUMN memory_ids bigint[] NOT NULL")
    op.execute(
        "INSERT INTO memory_access_log (id, namespace, context, accessed_at, memory_ids) "
        "SELECT id, namespace, context, accessed_at, memory_ids FROM access_log_0020"
    )
    # The serving role deleted log rows only through the trigger, as forget's caller.
    op.execute(f"REVOKE DELETE ON memory_access_log FROM {ROLE}")


def downgrade() -> None:
    op.execute(
        """
        CREATE TEMP TABLE access_log_0020 ON COMMIT DROP AS
        SELECT l.namespace, l.context, l.accessed_at, u.memory_id, l.id, u.n
        FROM memory_access_log l, unnest(l.memory_ids) WITH ORDINALITY AS u(memory_id, n)
        WHERE EXISTS (SELECT 1 FROM memories m WHERE m.id = u.memory_id)
        """
    )
    op.execute("TRUNCATE memory_access_log")
    op.execute("ALTER TABLE memory_access_log DROP COLUMN memory_ids")
    op.execute("ALTER TABLE memory_access_log ADD COLUMN memory_id bigint NOT NULL")
    op.execute(
        "INSERT INTO memory_access_log (memory_id, namespace, context, accessed_at) "
        "SELECT memory_id, namespace, context, accessed_at FROM access_log_0020 ORDER BY id, n"
    )
    op.execute("CREATE INDEX ix_memory_access_log_memory_id ON memory_access_log (memory_id)")
    op.execute(f"GRANT DELETE ON memory_access_log TO {ROLE}")
    op.execute(GONE.format(log=LOG_GONE))
