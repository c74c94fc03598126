"""Erasure statements: a whole namespace (forget), then the scrub of the store; pin, unpin.

Each statement is whole and named; the caller runs them in one transaction and reports
each one's row count. Tables that later migrations add (the write queue, the long-term
entries) are erased when present. ``REMAINING`` then asks the catalogue for every table
with a ``namespace`` column and counts what is left, so a table added later that
``forget`` does not know yet fails the erasure instead of silently keeping data. The
``audit_log`` row that records the erasure is the one deliberate exception.
The ``embedding_cache`` has no namespace: ``forget`` drops the vectors of the
namespace's hot memory texts (by text hash, before the memories go). ``runs`` holds no
content and is left alone.

Deleted rows stay in the table files until a ``VACUUM``; ``vacuum`` runs one on the
tables an erasure touched (``FULL`` rewrites them, so their old pages are gone). ``ANALYZE``
copies column values into ``pg_statistic`` (most common values, histogram bounds), and
deleting the rows leaves them there; an ``ANALYZE`` of a table that became empty keeps
them too. ``refresh_statistics`` clears a table's statistics and those of its expression
indexes (``pg_clear_attribute_stats``, PostgreSQL 18), then analyzes what is left.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

from storage.embedding import TURN_HASHES_SQL

FORGET = {
    # Vectors computed from the namespace's texts (first: it reads the memories and the
    # document chunks, whose vectors are made from heading and text, ``embed_text``).
    "embedding_cache": text(
        "DELETE FROM embedding_cache WHERE text_hash IN ("
        " SELECT encode(sha256(convert_to(content, 'UTF8')), 'hex')"
        " FROM memories WHERE namespace = :namespace"
        " UNION ALL"
        " SELECT encode(sha256(convert_to(CASE WHEN heading = '' THEN text"
        "     ELSE heading || E'\\n' || text END, 'UTF8')), 'hex')"
        " FROM document_chunks WHERE namespace = :namespace"
        f" UNION ALL {TURN_HASHES_SQL} m.namespace = :namespace)"
    ),
    "document_chunks": text("DELETE FROM document_chunks WHERE namespace = :namespace"),
    "documents": text("DELETE FROM documents WHERE namespace = :namespace"),
    "memory_access_log": text("DELETE FROM memory_access_log WHERE namespace = :namespace"),
    "memory_access_pending": text("DELETE FROM memory_access_pending WHERE namespace = :namespace"),
    "episodes": text("DELETE FROM episodes WHERE namespace = :namespace"),
    "processed_sessions": text("DELETE FROM processed_sessions WHERE namespace = :namespace"),
    "memories": text("DELETE FROM memories WHERE namespace = :namespace"),
    "chat_messages": text(
        "DELETE FROM chat_messages c USING chat_sessions s "
        "WHERE c.session_id = s.id AND s.namespace = :namespace"
    ),
    "chat_sessions": text("DELETE FROM chat_sessions WHERE namespace = :namespace"),
    "memory_file_blocks": text("DELETE FROM memory_file_blocks WHERE namespace = :namespace"),
    "archived_memories": text("DELETE FROM archived_memories WHERE namespace = :namespace"),
    "archive_manifest": text("DELETE FROM archive_manifest WHERE namespace = :namespace"),
}
FORGET_IF_PRESENT = {
    "memory_write_queue": text("DELETE FROM memory_write_queue WHERE namespace = :namespace"),
    "long_term_entries": text("DELETE FROM long_term_entries WHERE namespace = :namespace"),
    "namespace_terms": text("DELETE FROM namespace_terms WHERE namespace = :namespace"),
    "namespace_sizes": text("DELETE FROM namespace_sizes WHERE namespace = :namespace"),
    "namespace_chunk_terms": text("DELETE FROM namespace_chunk_terms WHERE namespace = :namespace"),
    # A forgotten namespace's keys go too: nobody writes into it again by an old key.
    "api_keys": text("DELETE FROM api_keys WHERE namespace = :namespace"),
    "weekly_summaries": text("DELETE FROM weekly_summaries WHERE namespace = :namespace"),
    "memory_access_daily": text("DELETE FROM memory_access_daily WHERE namespace = :namespace"),
    # Last: without its key no pseudonym in a report leads back to the namespace.
    "pseudonym_keys": text("DELETE FROM pseudonym_keys WHERE namespace = :namespace"),
}
TABLE_EXISTS = text("SELECT to_regclass(:name) IS NOT NULL")

REMAINING = text(
    "SELECT table_name, n FROM archivist_namespace_rows(:namespace) "
    "WHERE table_name <> 'audit_log' AND n > 0"
)

# The statistics of a table and of its indexes' expressions (stored under the index).
STATISTICS = text(
    """
    SELECT s.tablename, s.attname, s.inherited FROM pg_stats s
    WHERE s.schemaname = current_schema()
      AND (s.tablename = :table OR s.tablename IN (
          SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid = CAST(:table AS regclass)))
    ORDER BY 1, 2
    """
)
CAN_CLEAR_STATISTICS = text(
    "SELECT to_regprocedure('pg_clear_attribute_stats(text,text,text,boolean)') IS NOT NULL"
)
CLEAR_STATISTIC = text(
    "SELECT pg_clear_attribute_stats(current_schema(), :relation, :column, :inherited)"
)

# Runs given the namespace as a parameter: the recorded parameter becomes its pseudonym
# (runs recorded before pseudonyms hold the name); their Prefect flow runs, to rename there.
PSEUDONYMIZE_RUNS = text(
    """
    UPDATE runs
    SET parameters = jsonb_set(parameters, '{namespace}', to_jsonb(CAST(:pseudonym AS text)))
    WHERE parameters->>'namespace' IN (:namespace, :pseudonym)
    RETURNING flow_run_id
    """
)

PIN = text(
    "UPDATE memories SET pinned = :pinned, salience = CASE WHEN :pinned THEN 1 ELSE salience END "
    "WHERE id = :id RETURNING namespace"
)


# Every table an erasure deletes from: the only names ``vacuum`` accepts.
ERASABLE = frozenset(FORGET) | frozenset(FORGET_IF_PRESENT)


def table_exists(session: Session, name: str) -> bool:
    return bool(session.execute(TABLE_EXISTS, {"name": name}).scalar_one())


def forget_rows(session: Session, namespace: str) -> dict[str, int]:
    """Delete every row of the namespace; rows deleted per table."""
    counts = {}
    statements = dict(FORGET)
    statements |= {k: v for k, v in FORGET_IF_PRESENT.items() if table_exists(session, k)}
    for table, statement in statements.items():
        result = session.execute(statement, {"namespace": namespace})
        counts[table] = int(getattr(result, "rowcount", 0))
    return counts


def remaining(session: Session, namespace: str) -> dict[str, int]:
    """Rows still holding the namespace, per table with a ``namespace`` column (non-zero)."""
    rows = session.execute(REMAINING, {"namespace": namespace}).all()
    return {str(name): int(n) for name, n in rows if n}


def vacuum(connection: Connection, tables: Iterable[str], *, full: bool = False) -> list[str]:
    """``VACUUM`` (or ``VACUUM FULL``) each erasable table given; ``connection`` autocommits.

    A plain ``VACUUM`` removes dead rows from the heap and the indexes without blocking
    readers; ``FULL`` rewrites each table into new files and holds an exclusive lock while
    it does. Names outside the erasure statements are refused, never put into SQL.
    """
    done = []
    for table in tables:
        if table not in ERASABLE:
            raise ValueError(f"not an erasable table: {table!r}")
        connection.execute(text(f"VACUUM {'(FULL) ' if full else ''}{table}"))
        done.append(table)
    return done


def present(session: Session | Connection) -> list[str]:
    """The erasable tables this store has (a table a later migration adds may be missing)."""
    return [t for t in sorted(ERASABLE) if session.execute(TABLE_EXISTS, {"name": t}).scalar_one()]


def refresh_statistics(connection: Connection, table: str) -> int:
    """Clear the planner's statistics of an erasable table and its expression indexes, then
    ``ANALYZE`` it, so they hold only values of the rows left; returns how many were
    cleared (none before PostgreSQL 18, where only the ``ANALYZE`` runs)."""
    if table not in ERASABLE:
        raise ValueError(f"not an erasable table: {table!r}")
    cleared = 0
    if connection.execute(CAN_CLEAR_STATISTICS).scalar_one():
        for relation, column, inherited in connection.execute(STATISTICS, {"table": table}).all():
            params = {"relation": relation, "column": column, "inherited": inherited}
            connection.execute(CLEAR_STATISTIC, params)
            cleared += 1
    connection.execute(text(f"ANALYZE {table}"))
    return cleared


def rewrite_statistics_catalog(connection: Connection) -> None:
    """``VACUUM FULL pg_statistic``: the statistics replaced above leave its files too.

    Needs a superuser or the MAINTAIN privilege on it; PostgreSQL skips it with a warning
    otherwise.
    """
    connection.execute(text("VACUUM (FULL) pg_catalog.pg_statistic"))


def pseudonymize_runs(session: Session, namespace: str, pseudonym: str) -> list[str]:
    """Runs recorded with the namespace as a parameter now record its pseudonym; returns
    their Prefect flow-run ids."""
    params = {"namespace": namespace, "pseudonym": pseudonym}
    found = session.execute(PSEUDONYMIZE_RUNS, params).scalars()
    return sorted({str(run) for run in found if run is not None})


def set_pinned(session: Session, memory_id: int, *, pinned: bool) -> str | None:
    """Pin or unpin a hot memory; its namespace, or None if it is not in the hot table."""
    value = session.execute(PIN, {"id": memory_id, "pinned": pinned}).scalar()
    return None if value is None else str(value)
