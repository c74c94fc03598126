"""After an erasure: the erased values out of the table files and the planner's statistics.

Without ``full``, a plain ``VACUUM`` of each table that lost rows: it does not block
searches, but a deleted row's bytes may stay in a page until PostgreSQL reuses the space.
With ``full``, ``VACUUM FULL`` rewrites every erasable table and its indexes, whether this
erasure deleted from it or not: an earlier step (compression, archival, a sync replacing a
session's state) may have deleted the namespace's rows from it, and their bytes stay in its
heap and index pages until it is rewritten.

Either way every erasable table's statistics are then cleared and rebuilt from the rows
left (a table the erasure emptied keeps none), and with ``full`` ``pg_statistic`` is
rewritten so the replaced statistics leave its files too. A re-run does all of it again,
so an erasure interrupted after its commit finishes here.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Engine

from storage.operations import privacy


def scrub(engine: Engine, rows: Mapping[str, int], *, full: bool) -> list[str]:
    """Vacuum (``full``: rewrite) and re-analyze; returns the tables vacuumed."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        tables = privacy.present(connection)
        chosen = tables if full else [t for t in tables if rows.get(t)]
        vacuumed = privacy.vacuum(connection, chosen, full=full)
        for table in tables:
            privacy.refresh_statistics(connection, table)
        if full:
            privacy.rewrite_statistics_catalog(connection)
    return vacuumed
