"""Move large namespaces' memories and document chunks into their HNSW indexes, in small
committed batches."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.operations.ann import (
    TABLES,
    create_namespace_index,
    flag_batch,
    large_namespaces,
    refresh_chunk_terms,
    refresh_size,
    refresh_terms,
)

# Words in fewer memories (or indexed document chunks) than this are counted live by search
# (cheaply: few matches).
TERM_MIN_DF = 20


def refresh_ann_index(
    engine: Engine,
    min_rows: int,
    *,
    batch: int = 1000,
    on_progress: Callable[[str, int, int], None] | None = None,
    term_min_df: int = TERM_MIN_DF,
) -> dict[str, int]:
    """Flag every unindexed row of namespaces with ``min_rows`` or more memories (or
    document chunks); rows flagged per namespace. Then store each such namespace's size and
    the counts of its words in at least ``term_min_df`` rows.

    Each batch commits on its own, so an interruption keeps the work done, and searches
    stay correct throughout (unflagged rows are scanned exactly).
    """
    flagged: dict[str, int] = {}
    for table in TABLES:
        done = _flag_table(engine, table, min_rows, term_min_df, batch, on_progress)
        for namespace, count in done.items():
            flagged[namespace] = flagged.get(namespace, 0) + count
        if any(done.values()):
            # Every flagged row left a dead version behind; clear them and refresh statistics.
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f"VACUUM (ANALYZE) {table}"))
    return flagged


def _flag_table(
    engine: Engine,
    table: str,
    min_rows: int,
    min_df: int,
    batch: int,
    on_progress: Callable[[str, int, int], None] | None,
) -> dict[str, int]:
    with Session(engine) as session:
        targets = large_namespaces(session, min_rows, table)
    flagged: dict[str, int] = {}
    for namespace, pending in targets.items():
        with Session(engine) as session, session.begin():  # first: a flagged row is in it
            create_namespace_index(session, namespace, table)
        done = 0
        while True:
            with Session(engine) as session, session.begin():
                moved = flag_batch(session, namespace, batch, table)
            if moved == 0:
                break
            done += moved
            if on_progress is not None:
                on_progress(namespace, done, pending)
        flagged[namespace] = done
        with Session(engine) as session, session.begin():
            refresh_size(session, namespace, table)
            if table == "memories":
                refresh_terms(session, namespace, min_df)
            else:
                refresh_chunk_terms(session, namespace, min_df)
    return flagged
