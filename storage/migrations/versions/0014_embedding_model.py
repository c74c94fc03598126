"""The schema records which model made its vectors, beside their dimension.

Revision ID: 0014
Revises: 0013

Vectors of two models are not comparable even when their sizes agree, so a store refuses
an embedder of another model (``storage.meta.check_compatible``) until ``archivist
reembed`` has re-embedded it. A store that already holds memories records the model most
of them name; an empty store records the first embedder that opens it.
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        INSERT INTO archivist_meta (key, value)
        SELECT 'embedding_model', embedding_model FROM memories
        GROUP BY embedding_model ORDER BY count(*) DESC, embedding_model LIMIT 1
        ON CONFLICT (key) DO NOTHING
        """
    )


def downgrade() -> None:
    op.execute("DELETE FROM archivist_meta WHERE key = 'embedding_model'")
