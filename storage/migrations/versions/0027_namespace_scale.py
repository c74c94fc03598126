"""What grows with a namespace's own work, not with every namespace's history: an HNSW
index per large namespace's document chunks, and priming's reads through indexes.

Revision ID: 0027
Revises: 0026

Chunks of every large namespace shared one partial HNSW index (migration 0017) while
memories have one per namespace (migration 0019). A search walks it filtered to its
namespace, so the walk visits the other namespaces' chunks too, and its cost grows with
every namespace's documents rather than its own (``bench/scale.py`` measures document
search with a large chunk table: docs/how-to/benchmarks.md). Now chunks are indexed as memories
are: each namespace with flagged chunks gets its own index, partial on
``ann_indexed AND namespace = '...'`` and named by a hash of the namespace
(``storage.operations.ann.namespace_index(namespace, "document_chunks")``), built from its
chunks here; then the shared index goes. ``archivist index`` makes a namespace's index
before it flags the namespace's first chunks; ``forget`` drops it.

Priming read a namespace's latest episodes and its most important facts by sorting all of
them (the namespace's btree only): 54 and 66 ms in a namespace of 18,000 memories
(``bench/scale.py``'s 100,000 store), more with every session. Two indexes give them in
order: episodes by (namespace, ended_at DESC, session_id), which also serves every lookup
by namespace (the namespace-only index goes), and the facts, preferences and decisions
not archived by (namespace, importance DESC, occurred_at DESC, id).
"""

from __future__ import annotations

import hashlib

from alembic import op
from sqlalchemy import text

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

PREFIX = "ix_document_chunks_hnsw_"
SHARED = (
    "CREATE INDEX ix_document_chunks_hnsw ON document_chunks "
    "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
    "WHERE ann_indexed"
)


def _own(namespace: str) -> str:
    name = PREFIX + hashlib.md5(namespace.encode(), usedforsecurity=False).hexdigest()[:16]
    literal = "'" + namespace.replace("'", "''") + "'"
    return (
        f"CREATE INDEX IF NOT EXISTS {name} ON document_chunks "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
        f"WHERE ann_indexed AND namespace = {literal}"
    )


EPISODES = (
    "CREATE INDEX ix_episodes_namespace_ended ON episodes (namespace, ended_at DESC, session_id)"
)
FACTS = (
    "CREATE INDEX ix_memories_top_facts ON memories "
    "(namespace, importance DESC, occurred_at DESC, id) "
    "WHERE kind IN ('fact', 'preference', 'decision') AND tier <> 'archived'"
)


def upgrade() -> None:
    op.execute(EPISODES)
    op.execute("DROP INDEX ix_episodes_namespace")
    op.execute(FACTS)
    bind = op.get_bind()
    indexed = text("SELECT DISTINCT namespace FROM document_chunks WHERE ann_indexed ORDER BY 1")
    for namespace in bind.execute(indexed).scalars().all():
        op.execute(_own(namespace))
    op.execute("DROP INDEX IF EXISTS ix_document_chunks_hnsw")


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_top_facts")
    op.execute("CREATE INDEX ix_episodes_namespace ON episodes (namespace)")
    op.execute("DROP INDEX ix_episodes_namespace_ended")
    bind = op.get_bind()
    own = text(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'document_chunks' "
        "AND starts_with(indexname, :prefix)"
    )
    for name in bind.execute(own, {"prefix": PREFIX}).scalars().all():
        op.execute(f"DROP INDEX {name}")
    op.execute(SHARED)
