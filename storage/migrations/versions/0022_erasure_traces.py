"""What erasure needs to find every copy: pseudonym keys, and the sessions behind each view.

Revision ID: 0022
Revises: 0021

``pseudonym_keys`` holds one random key per namespace (``storage.pseudonyms``): reports,
logs and Prefect name a namespace or a session by an HMAC under it, never by the name or
id a user chose, and ``forget`` deletes the key, so those ids can no longer be tied back.

``long_term_entries.session_ids`` are the sessions of the memories merged into an entry:
a session's later state replaces its memories (new ids), and the entry's ``memory_ids``
no longer lead to it, while its text still came from it. The existing entries get theirs
from the memories, hot or archived, that their ids still find.

``weekly_summaries`` records each ``memory/weekly/<Monday>.md`` a tidy wrote: its window,
time zone and the sessions it quotes, so ``purge`` can rebuild it without the session.
Summaries written before this migration are not recorded (their window is not known).

The serving role gets no right on either table.
"""

from __future__ import annotations

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE pseudonym_keys (
            namespace varchar(100) PRIMARY KEY,
            key bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        ALTER TABLE long_term_entries ADD COLUMN session_ids text[] NOT NULL DEFAULT '{}';
        UPDATE long_term_entries t SET session_ids = found.ids
        FROM (
            SELECT e.namespace, e.entry_key,
                   array_agg(DISTINCT s.session_id ORDER BY s.session_id) AS ids
            FROM long_term_entries e
            CROSS JOIN LATERAL (
                SELECT m.session_id FROM memories m WHERE m.id = ANY(e.memory_ids)
                UNION ALL
                SELECT a.session_id FROM archived_memories a
                WHERE a.memory_id = ANY(e.memory_ids)
            ) s
            WHERE s.session_id IS NOT NULL
            GROUP BY e.namespace, e.entry_key
        ) found
        WHERE t.namespace = found.namespace AND t.entry_key = found.entry_key;
        CREATE TABLE weekly_summaries (
            namespace varchar(100) NOT NULL,
            monday date NOT NULL,
            window_start timestamptz NOT NULL,
            window_end timestamptz NOT NULL,
            timezone text NOT NULL,
            session_ids text[] NOT NULL DEFAULT '{}',
            updated_at timestamptz NOT NULL,
            CONSTRAINT pk_weekly_summaries PRIMARY KEY (namespace, monday)
        );
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP TABLE weekly_summaries;
        ALTER TABLE long_term_entries DROP COLUMN session_ids;
        DROP TABLE pseudonym_keys;
        """
    )
