"""Upkeep for large namespaces: which memories and document chunks the partial HNSW
indexes cover, and the common words' counts that BM25 needs.

Inserting into HNSW costs about 2 ms a row here, too much for the sync's write path. Rows
are written unflagged and found by an exact scan; this step flags the rows of namespaces
large enough that an exact scan gets slow, moving index upkeep off the write path.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

# The tables whose rows the partial HNSW indexes cover: memories and document chunks.
TABLES = ("memories", "document_chunks")
LARGE_NAMESPACES = {
    table: text(
        f"SELECT namespace, count(*) FILTER (WHERE NOT ann_indexed) AS pending FROM {table} "
        "GROUP BY namespace HAVING count(*) >= :min_rows ORDER BY namespace"
    )
    for table in TABLES
}
FLAG_BATCH = {
    table: text(
        f"""
        WITH batch AS (
            SELECT id FROM {table}
            WHERE namespace = :namespace AND NOT ann_indexed
            ORDER BY id LIMIT :batch
            FOR UPDATE SKIP LOCKED
        )
        UPDATE {table} m SET ann_indexed = true FROM batch WHERE m.id = batch.id
        """
    )
    for table in TABLES
}


CLEAR_TERMS = text("DELETE FROM namespace_terms WHERE namespace = :namespace")
# Words in at least :min_df memories of the namespace, with their document frequency.
STORE_TERMS = text(
    """
    INSERT INTO namespace_terms (namespace, lexeme, df)
    SELECT CAST(:namespace AS text), word, ndoc
    FROM ts_stat(
        format('SELECT tsv FROM memories WHERE namespace = %L', CAST(:namespace AS text))
    )
    WHERE ndoc >= :min_df
    """
)


def refresh_terms(session: Session, namespace: str, min_df: int) -> int:
    """Replace the namespace's stored common words and counts; returns how many."""
    # Two statements: a DELETE in a CTE runs unordered with the INSERT beside it.
    session.execute(CLEAR_TERMS, {"namespace": namespace})
    result = session.execute(STORE_TERMS, {"namespace": namespace, "min_df": min_df})
    return int(getattr(result, "rowcount", 0))


def large_namespaces(session: Session, min_rows: int, table: str = "memories") -> dict[str, int]:
    """Namespaces with at least ``min_rows`` rows in ``table`` (memories or document
    chunks), and how many are not yet indexed."""
    rows = session.execute(LARGE_NAMESPACES[table], {"min_rows": min_rows})
    return {r.namespace: int(r.pending) for r in rows}


def flag_batch(session: Session, namespace: str, batch: int, table: str = "memories") -> int:
    """Put up to ``batch`` more rows of the namespace into the HNSW index; returns how many."""
    result = session.execute(FLAG_BATCH[table], {"namespace": namespace, "batch": batch})
    return int(getattr(result, "rowcount", 0))
