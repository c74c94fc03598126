"""The memories' candidate rows of a search, widened while long messages' chunks crowd the
pool, and PostgreSQL's plan for them (``archivist search --plan``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from storage.kernel.settings import RetrievalSettings
from storage.retrieval.candidates._prepared import rows
from storage.retrieval.candidates._request import (
    FirstRow,
    Request,
    neighbours,
    plan,
    pool_target,
)
from storage.retrieval.candidates._sql import (
    CANDIDATES,
    EXPLAIN_ANN,
    EXPLAIN_CANDIDATES,
    EXPLAIN_CHUNK_ANN,
    HAS_INDEXED_CHUNKS,
)

Place = tuple[str, tuple[str, ...]] | int


def message_key(
    kind: str, session_id: str | None, message_ids: Sequence[str], memory_id: int
) -> Place:
    """What one place in the results is: a turn's message (all its chunks), else the memory."""
    if kind == "turn" and session_id is not None:
        return (session_id, tuple(message_ids))
    return memory_id


def distinct_messages(found: Sequence[Any]) -> int:
    """How many places candidate rows can fill once chunks of one message count once."""
    return len({message_key(r.kind, r.session_id, r.message_ids, r.id) for r in found})


def memory_rows(
    conn: Connection,
    settings: RetrievalSettings,
    request: Request,
    prepared: tuple[dict[str, Any], int, FirstRow] | None,
) -> tuple[Sequence[Any], dict[str, Any] | None, FirstRow | None]:
    """The memories' candidate rows, their statement's parameters (None: no memory), and
    what the first statement found for the document chunks' part (None: not known);
    ``prepared``: ``search_params``'."""
    if prepared is None:
        return [], None, None
    params, n_indexed, first = prepared
    found = _candidates(conn, settings, params, n_indexed)
    # A long message's chunks can fill the pool and then count once: widen it, twice at
    # most, while that leaves fewer distinct messages than asked for.
    for _ in range(2):
        if len(found) < params["n"] or distinct_messages(found) >= pool_target(request.limit):
            break
        params |= {"n": params["n"] * 4, "n_lexical": max(params["n"] * 4, 50)}
        found = _candidates(conn, settings, params, n_indexed)
    return found, params, first


def _candidates(
    conn: Connection, settings: RetrievalSettings, params: dict[str, Any], n_indexed: int
) -> Sequence[Any]:
    # Bitmap scans only (the exact settings that lexical_stats and neighbours leave):
    # the planner otherwise walks a whole large namespace through a btree to test
    # the lexemes row by row (45 ms at 18k rows, against 5 via GIN).
    params |= neighbours(conn, settings, params, n_indexed)
    return rows(conn, CANDIDATES, params, prepare=settings.prepared_statements)


def plan_lines(
    conn: Connection, settings: RetrievalSettings, params: dict[str, Any], n_indexed: int
) -> list[str]:
    """PostgreSQL's plans of a search's statements: the HNSW walks (memories', and
    document chunks', if the namespace has indexed rows there) and the memories'
    candidates statement."""
    lines: list[str] = []
    if n_indexed:
        plan(conn, settings, force_index=True, exact=False)
        lines += conn.execute(EXPLAIN_ANN, params).scalars().all()
    if conn.execute(HAS_INDEXED_CHUNKS, params).scalar():
        plan(conn, settings, force_index=True, exact=False)
        lines += conn.execute(EXPLAIN_CHUNK_ANN, params).scalars().all()
    params |= {"ann_ids": [], "ann_dists": []}
    plan(conn, settings, force_index=False, exact=True)
    lines += conn.execute(EXPLAIN_CANDIDATES, params).scalars().all()
    return lines
