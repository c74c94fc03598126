"""Lexemes scoped to their namespace, so a lexical lookup reads one namespace's postings.

Revision ID: 0018
Revises: 0017

Full-text search had one GIN index over ``tsv`` for the whole table. A lookup of a word in
one namespace read the word's postings in every namespace and kept the namespace's: at
100,000 memories a common word cost about 1 ms of index reading, for a namespace of 12
memories as for one of 18,000, and more as the store grows. Counting each query word's
documents (BM25's idf) and picking the lexical candidates did that once per word, and were
the largest part of a search's time in PostgreSQL.

``memories`` and ``document_chunks`` get ``scoped_tsv``: the same lexemes without positions,
each prefixed with its namespace and a colon (``alice:dentist``), which no namespace
contains, so every prefixed lexeme belongs to one namespace. Its GIN index replaces the one
on ``tsv``, which no statement uses any more; ``tsv`` stays for BM25's term frequencies and
``ts_rank``. A lexeme too long to carry its prefix (over 2,047 bytes with it, the most
PostgreSQL keeps) is left out of ``scoped_tsv``; such a "word" is no query's.

The row-level security policy of both tables becomes a filter that PostgreSQL cannot use as
an index condition (``IS TRUE`` around a comparison with the setting, read once per
statement). As an index condition it led the planner to AND the namespace's whole btree
into each lexical lookup (18,000 entries read for 1,380 matches, all of them the
namespace's already). Every statement names its namespace itself; the policy stays the
wall that shows nothing else.

Adding a stored column rewrites both tables: about 12 s for 100,000 memories here.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

SCOPE = "current_setting('archivist.namespace', true)"
STORED_CONFIG = text("SELECT value FROM archivist_meta WHERE key = 'text_search_config'")
# The text each table's lexemes come from (as its ``tsv`` column).
SOURCES = {"memories": "content", "document_chunks": "heading || ' ' || text"}
OLD_INDEXES = {"memories": "ix_memories_tsv", "document_chunks": "ix_document_chunks_tsv"}

SCOPED_LEXEMES = """
    CREATE FUNCTION archivist_scoped_lexemes(namespace text, lexemes tsvector)
    RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN array_to_tsvector(ARRAY(
        SELECT namespace || ':' || l FROM unnest(tsvector_to_array(lexemes)) l
        WHERE octet_length(namespace) + 1 + octet_length(l) <= 2047))
"""


def upgrade() -> None:
    config = op.get_context().config
    attrs = config.attributes if config is not None else {}
    stored = op.get_bind().execute(STORED_CONFIG).scalar()
    ts_config = str(stored or attrs.get("text_search_config", "english"))
    op.execute(SCOPED_LEXEMES)
    for table, source in SOURCES.items():
        op.execute(
            f"ALTER TABLE {table} ADD COLUMN scoped_tsv tsvector GENERATED ALWAYS AS "
            f"(archivist_scoped_lexemes(namespace, to_tsvector('{ts_config}', {source}))) STORED"
        )
        op.execute(f"CREATE INDEX ix_{table}_scoped_tsv ON {table} USING gin (scoped_tsv)")
        op.execute(f"DROP INDEX {OLD_INDEXES[table]}")
        op.execute(
            f"ALTER POLICY namespace_scope ON {table} "
            f"USING ((namespace = (SELECT {SCOPE})) IS TRUE)"
        )
        op.execute(f"ANALYZE {table}")


def downgrade() -> None:
    for table in SOURCES:
        op.execute(f"ALTER POLICY namespace_scope ON {table} USING (namespace = {SCOPE})")
        op.execute(f"CREATE INDEX {OLD_INDEXES[table]} ON {table} USING gin (tsv)")
        op.execute(f"ALTER TABLE {table} DROP COLUMN scoped_tsv")  # its index goes with it
    op.execute("DROP FUNCTION archivist_scoped_lexemes(text, tsvector)")
