"""A search's own statements as server-side prepared statements with generic plans.

PostgreSQL spent longer planning a small namespace's candidates statement than running it
(0.68 ms against 0.45). Run through ``execute`` with ``prepare``, a statement is parsed and
planned once per pooled connection: psycopg prepares it (the engine's
``prepare_threshold`` is None, which leaves every other statement unprepared), and the
search's first statement sets ``plan_cache_mode`` to ``force_generic_plan`` for the rest of
its transaction (``planner_settings``), so the plan is made once, without the parameters'
values, and reused.

That plan is as good as one made for the values because no plan choice here depends on
them: the planner settings before each statement leave one way to answer it (an HNSW walk,
or bitmap scans), and the namespace tests, which could pick a plan by the namespace's size,
are filters rather than index conditions (migration 0018). ``bench/api.py`` and
``bench/eval.py`` measure it; the hits and scores are the same either way (tested).

The statements run on the pooled connection's psycopg cursor directly, inside the caller's
SQLAlchemy transaction: SQLAlchemy's execution around them (compiling, its result and row
objects, events) cost 0.06 ms of the server's CPU per statement, about 0.5 ms per search
of eight statements. Their rows are named tuples (``row.kind``, as SQLAlchemy's), the
engine's ``before_cursor_execute`` and ``after_cursor_execute`` listeners see them, and a
failure is SQLAlchemy's ``DBAPIError``, with the connection invalidated when the server
went away, as SQLAlchemy's own execution does. Their results come in binary: the same
values, read with less work than text (timestamps, arrays, floats): 0.30 ms instead of
0.43 for the hundred-odd rows of a candidates statement.

The HNSW walk is the exception: it is planned for its namespace each time (``plan`` sets
``force_custom_plan`` for it), which is how PostgreSQL picks the namespace's own index. A
prepared statement keeps the plan of the settings it was first planned under, so a
statement that must be planned under other settings (the exact re-run of an HNSW walk)
runs with ``prepare=False``: planned afresh. ``ARCHIVIST_RETRIEVAL__PREPARED_STATEMENTS=
false`` turns it all off, for a pooler that cannot keep prepared statements across
transactions (PgBouncer in transaction mode before 1.21).
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Mapping, Sequence
from typing import Any, cast

import psycopg
from psycopg.rows import RowMaker
from sqlalchemy import Connection, TextClause
from sqlalchemy.exc import DBAPIError, StatementError

MANY = False  # what an ``execute`` listener is told: one set of parameters, not many


def execute(
    conn: Connection, statement: TextClause, params: Mapping[str, Any], *, prepare: bool
) -> None:
    """Run ``statement`` for its effect; prepared on this connection (once) if ``prepare``."""
    _run(conn, statement, params, prepare=prepare, fetch=False)


def rows(
    conn: Connection, statement: TextClause, params: Mapping[str, Any], *, prepare: bool
) -> Sequence[Any]:
    """All rows of ``statement`` as named tuples; prepared as ``execute`` says."""
    return _run(conn, statement, params, prepare=prepare, fetch=True)


Step = tuple[TextClause, Mapping[str, Any]]


def pipelined(conn: Connection, steps: Sequence[Step], *, prepare: bool) -> list[list[Any]]:
    """Each step's rows, the steps sent together in one round trip (psycopg's pipeline
    mode) and run in order, as ``rows`` runs each: for statements none of which needs
    another's result here (planner settings and the statement they serve). The first
    failure fails them all, as the first of separate statements would."""
    driver = cast(psycopg.Connection[Any], conn.connection.driver_connection)
    before = driver.prepare_threshold
    if prepare:
        driver.prepare_threshold = 0
    events: Any = conn.dispatch
    sql, params = "", cast(Mapping[str, Any], {})
    sent: list[tuple[psycopg.Cursor[Any], str, Mapping[str, Any]]] = []
    try:
        with driver.pipeline():
            for statement, params in steps:
                sql = _driver_sql(conn, statement)
                cursor = driver.cursor(row_factory=_named, binary=True)
                sent.append((cursor, sql, params))
                for listener in events.before_cursor_execute:
                    listener(conn, cursor, sql, params, None, MANY)
                cursor.execute(sql, params, prepare=prepare)
        for cursor, sql, params in sent:
            for listener in events.after_cursor_execute:
                listener(conn, cursor, sql, params, None, MANY)
        return [cursor.fetchall() for cursor, _, _ in sent]
    except psycopg.Error as exc:
        raise _failed(conn, sql, params, exc) from exc
    finally:
        for cursor, _, _ in sent:
            cursor.close()
        driver.prepare_threshold = before


def plan_cache_mode(*, prepare: bool) -> str | None:
    """The ``plan_cache_mode`` a search's statements run under (None: the server's)."""
    return "force_generic_plan" if prepare else None


def _run(
    conn: Connection,
    statement: TextClause,
    params: Mapping[str, Any],
    *,
    prepare: bool,
    fetch: bool,
) -> list[Any]:
    sql = _driver_sql(conn, statement)
    driver = cast(psycopg.Connection[Any], conn.connection.driver_connection)
    before = driver.prepare_threshold
    if prepare:
        driver.prepare_threshold = 0  # None, the engine's, would refuse to prepare it
    events: Any = conn.dispatch  # its listeners see these statements as SQLAlchemy's own
    try:
        with driver.cursor(row_factory=_named, binary=True) as cursor:
            for listener in events.before_cursor_execute:
                listener(conn, cursor, sql, params, None, MANY)
            cursor.execute(sql, params, prepare=prepare)
            for listener in events.after_cursor_execute:
                listener(conn, cursor, sql, params, None, MANY)
            return cursor.fetchall() if fetch else []
    except psycopg.Error as exc:
        raise _failed(conn, sql, params, exc) from exc
    finally:
        driver.prepare_threshold = before


def _failed(
    conn: Connection, sql: str, params: Mapping[str, Any], exc: psycopg.Error
) -> StatementError:
    """SQLAlchemy's error for a failed statement, the connection invalidated when the
    server went away (as SQLAlchemy's own execution does)."""
    gone = conn.dialect.is_disconnect(cast(Any, exc), conn.connection.dbapi_connection, None)
    if gone:
        conn.invalidate(exc)
    return DBAPIError.instance(sql, dict(params), exc, psycopg.Error, connection_invalidated=gone)


def _driver_sql(conn: Connection, statement: TextClause) -> str:
    """The statement as psycopg takes it (``%(name)s`` parameters), compiled once."""
    return _compiled(statement, conn.dialect)


@functools.lru_cache(maxsize=256)
def _compiled(statement: TextClause, dialect: Any) -> str:
    return str(statement.compile(dialect=dialect))


def _named(cursor: psycopg.Cursor[Any]) -> RowMaker[Any]:
    """Rows as named tuples of the result's columns (repeated or odd names renamed)."""
    result = cursor.pgresult
    if result is None or not result.nfields:
        return tuple
    names = tuple((result.fname(i) or b"").decode() for i in range(result.nfields))
    return _row_maker(names)


@functools.lru_cache(maxsize=256)
def _row_maker(names: tuple[str, ...]) -> RowMaker[Any]:
    """Rows of these columns: the named tuple made straight from the values psycopg read
    (``tuple.__new__``, no Python frame per row as ``_make`` has: 0.2 us a row against
    0.47, a search reads 100 to 200 rows). psycopg hands over exactly one value per column."""
    row_type: Any = namedtuple("Row", names, rename=True)  # type: ignore[misc]
    return cast(RowMaker[Any], functools.partial(tuple.__new__, row_type))
