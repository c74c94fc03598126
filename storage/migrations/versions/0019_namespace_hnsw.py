"""An HNSW index per large namespace's memories, in place of one shared by all.

Revision ID: 0019
Revises: 0018

A search walks the HNSW index for a namespace's nearest memories. With one index over
every large namespace's memories, filtered to one namespace, the walk visited the other
namespaces' rows as well: 5 to 11 ms for 100 neighbours among 43,000 indexed memories,
whatever the namespace's size. In an index of the namespace's own (partial on
``namespace = '...'``, named by a hash of it: ``storage.operations.ann.namespace_index``) the same
walk took 1.8 ms. The walk is planned for its namespace (a custom plan), which is how
PostgreSQL picks the namespace's index.

Every namespace with memories in the shared index gets its own, built from them (a few
seconds for 43,000 memories here), then the shared index goes. ``archivist index`` makes a
namespace's index before it flags the namespace's first memories. Document chunks keep
their one shared partial index.
"""

from __future__ import annotations

import hashlib

from alembic import op
from sqlalchemy import text

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

PREFIX = "ix_memories_hnsw_"
SHARED = (
    "CREATE INDEX ix_memories_hnsw ON memories USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = 16, ef_construction = 64) WHERE ann_indexed"
)


def _own(namespace: str) -> str:
    name = PREFIX + hashlib.md5(namespace.encode(), usedforsecurity=False).hexdigest()[:16]
    literal = "'" + namespace.replace("'", "''") + "'"
    return (
        f"CREATE INDEX IF NOT EXISTS {name} ON memories "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
        f"WHERE ann_indexed AND namespace = {literal}"
    )


def upgrade() -> None:
    bind = op.get_bind()
    indexed = text("SELECT DISTINCT namespace FROM memories WHERE ann_indexed ORDER BY 1")
    for namespace in bind.execute(indexed).scalars().all():
        op.execute(_own(namespace))
    op.execute("DROP INDEX IF EXISTS ix_memories_hnsw")


def downgrade() -> None:
    bind = op.get_bind()
    own = text(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memories' "
        "AND starts_with(indexname, :prefix)"
    )
    for name in bind.execute(own, {"prefix": PREFIX}).scalars().all():
        op.execute(f"DROP INDEX {name}")
    op.execute(SHARED)
