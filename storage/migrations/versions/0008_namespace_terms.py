"""Term statistics of large namespaces, kept by the index step for BM25.

Revision ID: 0008
Revises: 0007

Counting a common word's memories in an 18k-row namespace cost 10-45 ms per query; the
counts of common words barely move, so ``archivist index`` stores them here. Search
reads them and counts live only the words missing here, which are rare and cheap.
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE namespace_terms (
            namespace varchar(100) NOT NULL,
            lexeme text NOT NULL,
            df integer NOT NULL,
            CONSTRAINT pk_namespace_terms PRIMARY KEY (namespace, lexeme)
        );
        """
    )
