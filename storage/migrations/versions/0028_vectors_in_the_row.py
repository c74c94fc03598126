"""A memory's vector stays in its row.

Revision ID: 0028
Revises: 0027

A row of ``memories`` takes about 2.3 KB, 1.5 of them its vector (384 float4). PostgreSQL
moves a row's large values out of line once the row is over ``toast_tuple_target`` (about
2 KB by default), and pgvector stores vectors ``EXTERNAL``: every vector went to the TOAST
table. A search reads the vectors of its candidates (the exact scan of a namespace without
HNSW rows reads all of them, the HNSW walk's neighbours read theirs again for their cosine),
each through the TOAST index and another page: of the 2,340 buffers an exact scan of 746
rows touched, 2,240 were TOAST's. With ``toast_tuple_target`` at its largest (8160) a row
under a page stays whole; a longer one still has its content, then its lexemes, then its
vector moved out, as before. ``document_chunks`` the same, for the same reason.

The setting changes how rows are written, not rows already there: each table is
rewritten once (``CLUSTER`` by its primary key, the order rows are written in anyway; the
table is not left marked as clustered), which takes an exclusive lock for about 25 s per
100,000 memories here, and rebuilds their indexes. The heap grows (100 MB to 380 MB per
100,000 memories) by what the TOAST table shrinks (156 MB to none).
"""

from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

TABLES = {"memories": "memories_pkey", "document_chunks": "document_chunks_pkey"}


def _rewrite(table: str, key: str) -> None:
    op.execute(f"CLUSTER {table} USING {key}")
    op.execute(f"ALTER TABLE {table} SET WITHOUT CLUSTER")
    op.execute(f"ANALYZE {table}")


def upgrade() -> None:
    for table, key in TABLES.items():
        op.execute(f"ALTER TABLE {table} SET (toast_tuple_target = 8160)")
        _rewrite(table, key)


def downgrade() -> None:
    for table, key in TABLES.items():
        op.execute(f"ALTER TABLE {table} RESET (toast_tuple_target)")
        _rewrite(table, key)
