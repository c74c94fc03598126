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

The HNSW walk is the exception: it is planned for its namespace each time (``plan`` sets
``force_custom_plan`` for it), which is how PostgreSQL picks the namespace's own index. A
prepared statement keeps the plan of the settings it was first planned under, so a
statement that must be planned under other settings (the exact re-run of an HNSW walk)
runs with ``prepare=False``: planned afresh. ``ARCHIVIST_RETRIEVAL__PREPARED_STATEMENTS=
false`` turns it all off, for a pooler that cannot keep prepared statements across
transactions (PgBouncer in transaction mode before 1.21).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import psycopg
from sqlalchemy import Connection, CursorResult, Row, TextClause


def execute(
    conn: Connection, statement: TextClause, params: Mapping[str, Any], *, prepare: bool
) -> CursorResult[Any]:
    """Run ``statement``; prepared on this connection (once) if ``prepare``."""
    if not prepare:
        return conn.execute(statement, params)
    driver = cast(psycopg.Connection[Any], conn.connection.driver_connection)
    before = driver.prepare_threshold
    driver.prepare_threshold = 0  # prepare at the first run; later runs reuse it
    try:
        return conn.execute(statement, params)
    finally:
        driver.prepare_threshold = before


def rows(
    conn: Connection, statement: TextClause, params: Mapping[str, Any], *, prepare: bool
) -> Sequence[Row[Any]]:
    """All rows of ``statement`` (``execute``)."""
    return execute(conn, statement, params, prepare=prepare).all()


def plan_cache_mode(*, prepare: bool) -> str | None:
    """The ``plan_cache_mode`` a search's statements run under (None: the server's)."""
    return "force_generic_plan" if prepare else None
