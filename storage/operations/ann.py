"""Upkeep for large namespaces: which memories and document chunks the partial HNSW
indexes cover, and the common words' counts and the sizes that BM25 needs (memories' and
document chunks').

Inserting into HNSW costs about 2 ms a row here, too much for the sync's write path. Rows
are written unflagged and found by an exact scan; this step flags the rows of namespaces
large enough that an exact scan gets slow, moving index upkeep off the write path.

Each large namespace's memories have an HNSW index of their own, partial on the namespace
(migration 0019): a walk of one shared index, filtered to a namespace, visited the other
namespaces' rows too (5 to 11 ms for 100 neighbours among 43,000 indexed memories, against
1.8 ms in the namespace's own index). Document chunks have theirs the same way (migration
0027), so a namespace's walk grows with its own chunks, not with every namespace's. The
index is made before any row of the namespace is flagged, so a flagged row is always in it.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.orm import Session

# The tables whose rows the partial HNSW indexes cover: memories and document chunks.
TABLES = ("memories", "document_chunks")
INDEX_PREFIX = {table: f"ix_{table}_hnsw_" for table in TABLES}
# A large namespace's memories but turns (facts, preferences, decisions, episodes, task
# cards) have a second index: a walk for those kinds alone (priming's facts and episodes)
# went through the turns of the namespace's index and dropped them, more of them the larger
# the namespace (3,810 rows dropped for 100 facts among 156,000 memories, 40-90 ms; 1,512
# among 18,000); in its own graph it drops a few (224 and 4.5 ms instead of 15 at 18,000).
# The planner takes it whenever the walk's kinds exclude turns (its predicate is implied).
KINDS_PREFIX = "ix_memories_kinds_"
INDEXED_NAMESPACES = {
    table: text(f"SELECT DISTINCT namespace FROM {table} WHERE ann_indexed ORDER BY 1")
    for table in TABLES
}
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
# Document chunks' words are counted over the namespace's indexed chunks only: search adds
# the chunks not indexed yet, and deleting indexed chunks subtracts them (the trigger of
# migration 0031), so the counts stay exact between two index steps.
CLEAR_CHUNK_TERMS = text("DELETE FROM namespace_chunk_terms WHERE namespace = :namespace")
STORE_CHUNK_TERMS = text(
    """
    INSERT INTO namespace_chunk_terms (namespace, lexeme, df)
    SELECT CAST(:namespace AS text), word, ndoc
    FROM ts_stat(format('SELECT tsv FROM document_chunks WHERE namespace = %L AND ann_indexed',
                        CAST(:namespace AS text)))
    WHERE ndoc >= :min_df
    """
)


# The count and total lexical length of the namespace's rows in its HNSW index, which BM25
# needs (search adds the rows not in it yet: migration 0029).
STORE_SIZE = {
    table: text(
        f"""
        INSERT INTO namespace_sizes (namespace, source, rows, lex_len)
        SELECT CAST(:namespace AS text), '{table}', count(*), coalesce(sum(lex_len), 0)
        FROM {table} WHERE namespace = :namespace AND ann_indexed
        ON CONFLICT (namespace, source)
        DO UPDATE SET rows = excluded.rows, lex_len = excluded.lex_len
        """
    )
    for table in TABLES
}


def refresh_size(session: Session, namespace: str, table: str = "memories") -> None:
    """Store the size of the namespace's indexed rows of ``table`` (memories or document
    chunks), which search reads instead of counting the namespace."""
    session.execute(STORE_SIZE[table], {"namespace": namespace})


def refresh_terms(session: Session, namespace: str, min_df: int) -> int:
    """Replace the namespace's stored common words and counts; returns how many."""
    # Two statements: a DELETE in a CTE runs unordered with the INSERT beside it.
    session.execute(CLEAR_TERMS, {"namespace": namespace})
    result = session.execute(STORE_TERMS, {"namespace": namespace, "min_df": min_df})
    return int(getattr(result, "rowcount", 0))


def refresh_chunk_terms(session: Session, namespace: str, min_df: int) -> int:
    """Replace the namespace's stored common words of its indexed document chunks and their
    counts; returns how many."""
    session.execute(CLEAR_CHUNK_TERMS, {"namespace": namespace})
    result = session.execute(STORE_CHUNK_TERMS, {"namespace": namespace, "min_df": min_df})
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


def namespace_index(namespace: str, table: str = "memories") -> str:
    """The name of the namespace's HNSW index over ``table`` (memories or document chunks):
    a hash (a name has at most 63 bytes)."""
    return INDEX_PREFIX[table] + _digest(namespace)


def kinds_index(namespace: str) -> str:
    """The name of the namespace's second HNSW index, over its memories but turns."""
    return KINDS_PREFIX + _digest(namespace)


def _digest(namespace: str) -> str:
    return hashlib.md5(namespace.encode(), usedforsecurity=False).hexdigest()[:16]


def _namespace_indexes(namespace: str, table: str) -> list[tuple[str, str]]:
    """The namespace's HNSW indexes over ``table``: names and what each adds to the
    namespace's flagged rows."""
    own = [(namespace_index(namespace, table), "")]
    return own + [(kinds_index(namespace), " AND kind <> 'turn'")] if table == "memories" else own


def create_namespace_index(session: Session, namespace: str, table: str = "memories") -> None:
    """The namespace's HNSW indexes over its flagged rows of ``table`` (for memories, also
    the one of its memories but turns), unless they exist."""
    literal = "'" + namespace.replace("'", "''") + "'"
    for name, only in _namespace_indexes(namespace, table):
        session.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {name} ON {table} "
                "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                f"WHERE ann_indexed AND namespace = {literal}{only}"
            )
        )


def drop_namespace_index(session: Session, namespace: str) -> None:
    """The namespace's HNSW indexes (memories' and document chunks'), if any."""
    for table in TABLES:
        for name, _ in _namespace_indexes(namespace, table):
            session.execute(text(f"DROP INDEX IF EXISTS {name}"))


def create_namespace_indexes(session: Session) -> None:
    """An HNSW index for each namespace with flagged rows (after a new vector column)."""
    for table in TABLES:
        for namespace in session.execute(INDEXED_NAMESPACES[table]).scalars().all():
            create_namespace_index(session, namespace, table)
