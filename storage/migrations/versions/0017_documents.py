"""Knowledge documents beside memories: ``documents`` and their ``document_chunks``.

Revision ID: 0017
Revises: 0016

A document is one ingested file of a namespace (unique per namespace and URI), with the
text extracted from it: ``archivist docs rebuild`` re-chunks and re-embeds from that text,
so it works after the source moved or left. Its chunks hold a span of that text
(``char_start``..``char_end``), the heading path above it, a vector of the store's model
and dimension (read from ``memories.embedding``, which ``archivist reembed`` may have
resized since migration 0001), full-text lexemes like ``memories`` (``tsv``, ``lex_len``),
and an importance that feedback moves.

Both tables hold namespace data: row-level security as migration 0015 gives the others
(the serving role reads one namespace per transaction, nothing else), and ``forget``
finds them through ``archivist_namespace_rows`` like every table with a ``namespace``.
Chunks are indexed as memories are (migration 0002): a partial HNSW index holds the rows
flagged ``ann_indexed``, which ``archivist index`` sets for namespaces with many chunks;
the rest are scanned exactly, so ingest pays no HNSW upkeep. Their vectors are kept in the
row (storage MAIN), text and lexemes go to TOAST first: a chunk's text, lexemes and 384-d
vector pass the 2 KB TOAST threshold, and an exact scan that read every vector out of line
touched 14 times the pages (19,541 buffers against 1,371 heap pages for 9,475 chunks).
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

ROLE = "archivist_serving"
SCOPE = "current_setting('archivist.namespace', true)"
TABLES = ("documents", "document_chunks")
# The vector size of the store's memories (pgvector keeps it as the column's typmod).
STORE_DIM = text(
    "SELECT atttypmod FROM pg_attribute "
    "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
)


def upgrade() -> None:
    config = op.get_context().config
    attrs = config.attributes if config is not None else {}
    ts_config = str(attrs.get("text_search_config", "english"))
    stored = op.get_bind().execute(STORE_DIM).scalar()
    dim = int(stored) if stored and int(stored) > 0 else int(attrs.get("embedding_dim", 384))
    op.execute(
        """
        CREATE TABLE documents (
            id bigserial PRIMARY KEY,
            namespace varchar(100) NOT NULL,
            uri text NOT NULL,
            title text NOT NULL,
            tag varchar(100),
            format varchar(20) NOT NULL,
            content_hash varchar(64) NOT NULL,
            size bigint NOT NULL,
            text text NOT NULL,
            chunk_size integer NOT NULL,
            overlap integer NOT NULL,
            ingested_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            CONSTRAINT uq_documents_namespace_uri UNIQUE (namespace, uri)
        );
        CREATE INDEX ix_documents_namespace_tag ON documents (namespace, tag);
        """
    )
    op.execute(
        f"""
        CREATE TABLE document_chunks (
            id bigserial PRIMARY KEY,
            document_id bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
            namespace varchar(100) NOT NULL,
            ordinal integer NOT NULL,
            heading text NOT NULL DEFAULT '',
            text text NOT NULL,
            char_start integer NOT NULL,
            char_end integer NOT NULL,
            content_hash varchar(64) NOT NULL,
            embedding vector({dim}) NOT NULL,
            embedding_model varchar(200) NOT NULL,
            importance double precision NOT NULL DEFAULT 0.5,
            feedback_up integer NOT NULL DEFAULT 0,
            feedback_down integer NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL,
            ann_indexed boolean NOT NULL DEFAULT false,
            tsv tsvector GENERATED ALWAYS AS
                (to_tsvector('{ts_config}', heading || ' ' || text)) STORED,
            lex_len integer GENERATED ALWAYS AS
                (length(to_tsvector('{ts_config}', heading || ' ' || text))) STORED,
            CONSTRAINT uq_document_chunks_ordinal UNIQUE (document_id, ordinal)
        );
        ALTER TABLE document_chunks ALTER COLUMN embedding SET STORAGE MAIN;
        CREATE INDEX ix_document_chunks_namespace ON document_chunks (namespace, lex_len);
        CREATE INDEX ix_document_chunks_tsv ON document_chunks USING gin (tsv);
        CREATE INDEX ix_document_chunks_exact ON document_chunks (namespace)
            WHERE NOT ann_indexed;
        CREATE INDEX ix_document_chunks_hnsw ON document_chunks
            USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
            WHERE ann_indexed;
        """
    )
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY namespace_scope ON {table} TO {ROLE} "
            f"USING (namespace = {SCOPE}) WITH CHECK (namespace = {SCOPE})"
        )
    # Serving reads documents (search mixes their chunks in); it never writes them.
    op.execute(f"GRANT SELECT ON {', '.join(TABLES)} TO {ROLE}")


def downgrade() -> None:
    op.execute(f"REVOKE ALL ON {', '.join(TABLES)} FROM {ROLE}")
    op.execute("DROP TABLE document_chunks")
    op.execute("DROP TABLE documents")
