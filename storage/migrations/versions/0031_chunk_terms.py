"""Document chunks' common words counted by the index step for BM25, kept by their deletes.

Revision ID: 0031
Revises: 0030

BM25 needs the number of a namespace's chunks holding each of the query's words. Search
counted them live, up to 1,000 rows a word (migration 0018's scoped lookup, a heap visit
each): 20 to 230 ms for a new word in the 35,000 chunks of the largest namespace of
``bench/scale.py``'s 1M store, the main cause of its document searches' p99. Memories
store theirs (``namespace_terms``, migration 0008); chunks now do too, in
``namespace_chunk_terms``: ``archivist index`` stores, for each namespace with chunks in its
HNSW index, the words of at least 20 of those indexed chunks and their counts
(``storage.operations.ann.refresh_chunk_terms``). Search adds the chunks not indexed yet
that hold the word (through the partial index ``ix_document_chunks_exact``); a word not
stored is rare among the indexed chunks and counted live, as before.

Deleting chunks (a document deleted, replaced, purged, or its namespace forgotten) must
not leave those counts too high, nor keep a word no chunk holds any more (erasure): the
statement-level trigger ``document_chunks_gone`` subtracts the deleted indexed chunks from
their namespace's word counts, drops the words left in no indexed chunk, and subtracts them
from the namespace's stored size (``namespace_sizes``, migration 0029, which kept counting
them). It runs as the owner (``SECURITY DEFINER``): the serving role deletes a document of
its namespace (the HTTP API) but only reads these counts; it sees only the rows it deleted,
which its namespace's policy allowed.

Row-level security and grants are those of ``namespace_terms``, copied from the catalog:
the serving role reads its namespace's rows, the pipeline role all. Filled here for the
namespaces that have indexed chunks.

``ix_document_chunks_indexed`` (the namespace, over indexed chunks), as memories have
``ix_memories_indexed``: whether a namespace has chunks in its HNSW index is asked by each
search's first statement, and answered through the namespace's btree it filtered every
chunk of a namespace that has none (up to 2,000).
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

# storage.operations.ann / tasks.ann_index at this revision: words in fewer indexed chunks
# than this are counted live by search.
MIN_DF = 20
POLICIES = text(
    "SELECT policyname, permissive, roles, cmd, qual, with_check FROM pg_policies "
    "WHERE schemaname = current_schema() AND tablename = 'namespace_terms'"
)
GRANTS = text(
    "SELECT grantee, privilege_type FROM information_schema.role_table_grants "
    "WHERE table_schema = current_schema() AND table_name = 'namespace_terms' "
    "AND grantee <> current_user"
)
INDEXED = text("SELECT DISTINCT namespace FROM document_chunks WHERE ann_indexed ORDER BY 1")
FILL = text(
    """
    INSERT INTO namespace_chunk_terms (namespace, lexeme, df)
    SELECT CAST(:namespace AS text), word, ndoc
    FROM ts_stat(format('SELECT tsv FROM document_chunks WHERE namespace = %L AND ann_indexed',
                        CAST(:namespace AS text)))
    WHERE ndoc >= :min_df
    """
)
# Set-based over the statement's deleted rows (a transition table), through EXECUTE so that
# each statement is planned for how many went (one document's chunks, or a namespace's).
GONE = """
    CREATE FUNCTION archivist_chunks_gone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        EXECUTE $q$
            UPDATE namespace_sizes s SET rows = greatest(s.rows - g.rows, 0),
                                         lex_len = greatest(s.lex_len - g.lex_len, 0)
            FROM (SELECT namespace, count(*) AS rows, coalesce(sum(lex_len), 0) AS lex_len
                  FROM gone WHERE ann_indexed GROUP BY namespace) g
            WHERE s.namespace = g.namespace AND s.source = 'document_chunks'
        $q$;
        EXECUTE $q$
            UPDATE namespace_chunk_terms t SET df = t.df - w.n
            FROM (SELECT g.namespace, u.lexeme, count(*) AS n
                  FROM gone g CROSS JOIN LATERAL unnest(g.tsv) u
                  WHERE g.ann_indexed GROUP BY 1, 2) w
            WHERE t.namespace = w.namespace AND t.lexeme = w.lexeme
        $q$;
        EXECUTE $q$
            DELETE FROM namespace_chunk_terms t
            WHERE t.df <= 0 AND t.namespace IN (SELECT namespace FROM gone WHERE ann_indexed)
        $q$;
        RETURN NULL;
    END $$;
    REVOKE ALL ON FUNCTION archivist_chunks_gone() FROM PUBLIC;
    CREATE TRIGGER document_chunks_gone AFTER DELETE ON document_chunks
        REFERENCING OLD TABLE AS gone
        FOR EACH STATEMENT EXECUTE FUNCTION archivist_chunks_gone();
"""


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE namespace_chunk_terms (
            namespace varchar(100) NOT NULL,
            lexeme text NOT NULL,
            df integer NOT NULL,
            CONSTRAINT pk_namespace_chunk_terms PRIMARY KEY (namespace, lexeme)
        )
        """
    )
    bind = op.get_bind()
    policies = bind.execute(POLICIES).all()
    if policies:
        op.execute("ALTER TABLE namespace_chunk_terms ENABLE ROW LEVEL SECURITY")
    for p in policies:
        roles = ", ".join("PUBLIC" if r == "public" else _quoted(r) for r in p.roles)
        using = f" USING ({p.qual})" if p.qual is not None else ""
        check = f" WITH CHECK ({p.with_check})" if p.with_check is not None else ""
        op.execute(
            f"CREATE POLICY {_quoted(p.policyname)} ON namespace_chunk_terms AS {p.permissive} "
            f"FOR {p.cmd} TO {roles}{using}{check}"
        )
    for grant in bind.execute(GRANTS).all():
        op.execute(
            f"GRANT {grant.privilege_type} ON namespace_chunk_terms TO {_quoted(grant.grantee)}"
        )
    op.execute(GONE)
    op.execute(
        "CREATE INDEX ix_document_chunks_indexed ON document_chunks (namespace) WHERE ann_indexed"
    )
    for namespace in bind.execute(INDEXED).scalars().all():
        bind.execute(FILL, {"namespace": namespace, "min_df": MIN_DF})


def downgrade() -> None:
    op.execute("DROP INDEX ix_document_chunks_indexed")
    op.execute("DROP TRIGGER document_chunks_gone ON document_chunks")
    op.execute("DROP FUNCTION archivist_chunks_gone()")
    op.execute("DROP TABLE namespace_chunk_terms")
