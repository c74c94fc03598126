"""A vector can be read as its stored bytes (a binary-coercible cast to bytea).

Revision ID: 0011
Revises: 0010

Archival reads every vector it moves. Through pgvector's binary output
(``vector_send``) the server converts and sends each float on its own; cast to
``bytea`` it sends the stored bytes as they are (int16 dimensions, int16 unused, then
native float4s), and the client drops the 4-byte headers. Archival's fetch uses the
cast when it exists and ``vector_send`` otherwise.

Only a superuser can create such a cast; the embedded server's user is one. On a
server where the migrating user is not, this step does nothing.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        DO $$
        BEGIN
            IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
               AND NOT EXISTS (
                   SELECT 1 FROM pg_cast
                   WHERE castsource = 'vector'::regtype AND casttarget = 'bytea'::regtype
               )
            THEN
                CREATE CAST (vector AS bytea) WITHOUT FUNCTION;
            END IF;
        END $$;
        """
    )


def downgrade() -> None:
    op.execute("DROP CAST IF EXISTS (vector AS bytea)")
