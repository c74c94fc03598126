"""Upkeep for large namespaces: which memories the partial HNSW index covers, and the
common words' counts that BM25 needs.

Inserting into HNSW costs about 2 ms a row here, too much for the sync's write path. Rows
are written unflagged and found by an exact scan; this step flags the rows of namespaces
large enough that an exact scan gets slow, moving index upkeep off the write path.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

LARGE_NAMESPACES = text(
    "SELECT namespace, count(*) FILTER (WHERE NOT ann_indexed) AS pending FROM memories "
    "GROUP BY namespace HAVING count(*) >= :min_rows ORDER BY namespace"
)
FLAG_BATCH = text(
    """
    WITH batch AS (
        SELECT id FROM memories
        WHERE namespace = :namespace AND NOT ann_indexed
        ORDER BY id LIMIT :batch
        FOR UPDATE SKIP LOCKED
    )
    UPDATE memories m SET ann_indexed = true FROM batch WHERE m.id = batch.id
    """
)


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


def large_namespaces(session: Session, min_rows: int) -> dict[str, int]:
    """Namespaces with at least ``min_rows`` memories, and how many are not yet indexed."""
    rows = session.execute(LARGE_NAMESPACES, {"min_rows": min_rows})
    return {r.namespace: int(r.pending) for r in rows}


def flag_batch(session: Session, namespace: str, batch: int) -> int:
    """Put up to ``batch`` more rows of the namespace into the HNSW index; returns how many."""
    result = session.execute(FLAG_BATCH, {"namespace": namespace, "batch": batch})
    return int(getattr(result, "rowcount", 0))
