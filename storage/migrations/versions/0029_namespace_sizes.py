"""Sizes of large namespaces, kept by the index step for BM25.

Revision ID: 0029
Revises: 0028

BM25 needs a namespace's row count and mean lexical length. Search counted both over the
whole namespace (and kept them in-process for ``stats_ttl_seconds``): 670 ms for the
156,000 memories of the largest namespace of ``bench/scale.py``'s 1M store and 89 ms for
its 35,000 document chunks, paid by the first search of a namespace in each process every
five minutes. ``archivist index`` now stores the count and total lexical length of the
rows it put in a namespace's HNSW index (``storage.operations.ann.refresh_size``); search
adds the rows not in it yet, which the partial index ``ix_memories_exact`` (or
``ix_document_chunks_exact``) finds. A namespace without a stored size is counted whole, as
before. Filled here for the namespaces that have indexed rows.

Its row-level security and grants are those of ``namespace_terms``, copied from the
catalog: the serving role reads its namespace's rows, the pipeline role all.

The index step of this revision also gives each large namespace a second HNSW index, of its
memories but turns (``storage.operations.ann.kinds_index``), made by the next
``archivist index`` (not here: it takes minutes in a large store, and search does without
it meanwhile); the downgrade drops them.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

SOURCES = ("memories", "document_chunks")
POLICIES = text(
    "SELECT policyname, permissive, roles, cmd, qual, with_check FROM pg_policies "
    "WHERE schemaname = current_schema() AND tablename = 'namespace_terms'"
)
GRANTS = text(
    "SELECT grantee, privilege_type FROM information_schema.role_table_grants "
    "WHERE table_schema = current_schema() AND table_name = 'namespace_terms' "
    "AND grantee <> current_user"
)
FILL = """
    INSERT INTO namespace_sizes (namespace, source, rows, lex_len)
    SELECT namespace, '{table}', count(*), coalesce(sum(lex_len), 0) FROM {table}
    WHERE ann_indexed GROUP BY namespace
"""


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE namespace_sizes (
            namespace varchar(100) NOT NULL,
            source text NOT NULL CHECK (source IN ('memories', 'document_chunks')),
            rows bigint NOT NULL,
            lex_len bigint NOT NULL,
            CONSTRAINT pk_namespace_sizes PRIMARY KEY (namespace, source)
        )
        """
    )
    bind = op.get_bind()
    policies = bind.execute(POLICIES).all()
    if policies:
        op.execute("ALTER TABLE namespace_sizes ENABLE ROW LEVEL SECURITY")
    for p in policies:
        roles = ", ".join("PUBLIC" if r == "public" else _quoted(r) for r in p.roles)
        using = f" USING ({p.qual})" if p.qual is not None else ""
        check = f" WITH CHECK ({p.with_check})" if p.with_check is not None else ""
        op.execute(
            f"CREATE POLICY {_quoted(p.policyname)} ON namespace_sizes AS {p.permissive} "
            f"FOR {p.cmd} TO {roles}{using}{check}"
        )
    for grant in bind.execute(GRANTS).all():
        op.execute(f"GRANT {grant.privilege_type} ON namespace_sizes TO {_quoted(grant.grantee)}")
    for table in SOURCES:
        op.execute(FILL.format(table=table))


KINDS_INDEXES = text(
    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
    "AND tablename = 'memories' AND starts_with(indexname, 'ix_memories_kinds_')"
)


def downgrade() -> None:
    op.execute("DROP TABLE namespace_sizes")
    # The index step of this revision's code gives large namespaces a second HNSW index,
    # of their memories but turns (storage.operations.ann.kinds_index): they go too.
    for name in op.get_bind().execute(KINDS_INDEXES).scalars().all():
        op.execute(f'DROP INDEX "{name}"')
