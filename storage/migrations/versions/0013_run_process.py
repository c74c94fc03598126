"""A run records the process that runs it, so a run whose process died is marked crashed.

Revision ID: 0013
Revises: 0012

A run killed outright (``kill -9``, the OOM killer, a power cut) never records its end
and stayed ``running`` for good. Each run now records its host, pid and the process's
start time; the next run of the same flow and the watchdog mark ``crashed`` a running
run whose process is gone (``storage.runs``). Runs recorded before this migration have
no process and count as crashed once they are a day old, as runs of another host do.
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE runs
            ADD COLUMN host varchar(255),
            ADD COLUMN pid integer,
            ADD COLUMN process_started_at timestamptz
        """
    )
    op.execute("CREATE INDEX ix_runs_running ON runs (flow) WHERE status = 'running'")


def downgrade() -> None:
    op.execute("DROP INDEX ix_runs_running")
    op.execute("ALTER TABLE runs DROP COLUMN host, DROP COLUMN pid, DROP COLUMN process_started_at")
