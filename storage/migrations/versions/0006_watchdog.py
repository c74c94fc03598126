"""Watchdog state: one row per check, with its anomaly counter and last 3 snapshots.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE watchdog_state (
            check_key varchar(200) PRIMARY KEY,
            anomaly_count integer NOT NULL DEFAULT 0 CHECK (anomaly_count >= 0),
            alerting boolean NOT NULL DEFAULT false,
            last_alert_at timestamptz,
            last_status varchar(20) NOT NULL CHECK (last_status IN ('ok', 'anomaly')),
            last3 jsonb NOT NULL DEFAULT '[]'::jsonb,
            updated_at timestamptz NOT NULL
        );
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE watchdog_state")
