"""Candidates of a search: the request, its statement's parameters, the planner, HNSW walks.

The dense top ``limit x overfetch`` (pgvector cosine; HNSW with iterative scans over large
namespaces' indexed rows, an exact scan of everything else) united with the lexical top
(BM25 over PostgreSQL lexemes, with per-namespace statistics cached in ``StatsCache``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, TextClause

from storage.kernel.settings import RetrievalSettings
from storage.retrieval.candidates._inputs import DF_CAP, lexical_params, vector_literal
from storage.retrieval.candidates._prepared import pipelined, plan_cache_mode, rows
from storage.retrieval.candidates._sql import (
    ANN_NEIGHBOURS,
    PLANNER,
    PLANNER_DEFAULTS,
    QUERY_TERMS,
    TERM_STATS,
)
from storage.retrieval.candidates._stats import StatsCache, cached_term_stats
from storage.server.binary_arrays import Float8Array, Int8Array, TextArray

_BM25_K1, _BM25_B = 1.2, 0.75


@dataclass(frozen=True)
class Request:
    """One search, validated: what to look for, where, and how many."""

    namespace: str
    query: str
    vector: np.ndarray
    limit: int
    start: datetime | None = None
    end: datetime | None = None
    kinds: Sequence[str] | None = None
    include_archived: bool = False


@dataclass(frozen=True)
class Before:
    """A statement sent in one round trip with a search's first (``first_row``), run ahead
    of it in its transaction; ``check`` takes its rows, and what it raises ends the search
    (the API's key check: ``serving``)."""

    statement: TextClause
    params: Mapping[str, Any]
    check: Callable[[Sequence[Any]], None]


@dataclass(frozen=True)
class FirstRow:
    """What a search's first statement found that its document chunks' part reads too: the
    query's lexemes, and whether the namespace has chunks, and chunks in their HNSW index."""

    lexemes: list[str]
    has_docs: bool
    has_chunk_ann: bool

    @classmethod
    def of(cls, row: Any) -> FirstRow:
        return cls(list(dict.fromkeys(row.lexemes)), bool(row.has_docs), bool(row.has_chunk_ann))


def first_row(
    conn: Connection, settings: RetrievalSettings, cfg: str, request: Request, before: Before
) -> Any:
    """The row of a search's first statement (the query's lexemes, whether the namespace
    has indexed rows and document chunks; it sets ``SEARCH_SETTINGS``), ``before``'s
    statement run ahead of it in the same round trip and checked first."""
    asked = first_params(cfg, request.query, request.namespace, settings)
    steps = [(before.statement, before.params), (QUERY_TERMS, asked)]
    checked, found = pipelined(conn, steps, prepare=settings.prepared_statements)
    before.check(checked)
    return found[0]


def search_params(
    conn: Connection,
    request: Request,
    settings: RetrievalSettings,
    stats: StatsCache,
    cfg: str,
    first: Any = None,
) -> tuple[dict[str, Any], int, FirstRow] | None:
    """The candidate statement's parameters, the count of indexed rows and what the first
    statement found for the document chunks' part; None if the namespace has no memory.
    ``first``: the first statement's row when ``first_row`` ran it already."""
    n_docs, avg_len, n_indexed, found, terms = lexical_stats(
        conn, stats, cfg, request.namespace, request.query, settings, first
    )
    if n_docs == 0:
        return None
    n = pool_target(request.limit) * settings.overfetch
    tiers = ["fresh", "compressed"] + (["archived"] if request.include_archived else [])
    params = {
        "namespace": request.namespace,
        "qvec": vector_literal(request.vector),
        "n": n,
        "n_lexical": max(n, 50),
        "tiers": TextArray(tiers),
        "kinds": TextArray(request.kinds) if request.kinds else None,
        "start": request.start,
        "end": request.end,
        "k1": _BM25_K1,
        "b": _BM25_B,
        "avg_len": avg_len,
        **lexical_params(terms, n_docs, request.namespace),
    }
    return params, n_indexed, found


# Every search of up to this many hits ranks the same candidates, so the first k hits of
# search(limit=k) are the first k of search(limit=50): the pool never depends on k.
POOL_HITS = 50


def pool_target(limit: int) -> int:
    """How many distinct hits the candidate pool is sized for."""
    return max(limit, POOL_HITS)


def lexical_stats(
    conn: Connection,
    stats: StatsCache,
    cfg: str,
    namespace: str,
    query: str,
    settings: RetrievalSettings,
    first: Any = None,
) -> tuple[int, float, int, FirstRow, list[tuple[str, int]]]:
    """Size, mean length, has-index flag, what the first statement found for the chunks'
    part, and (lexeme, df) pairs; cached where harmless. ``first``: the first statement's
    row, if run already (``first_row``).

    Leaves the search's settings (``SEARCH_SETTINGS``) for the rest of the transaction."""
    prepare = settings.prepared_statements
    row = first
    if row is None:
        asked = first_params(cfg, query, namespace, settings)
        row = settled_rows(conn, QUERY_TERMS, asked, prepare=prepare)[0]
    found = FirstRow.of(row)
    size, known = cached_term_stats(
        conn, stats, TERM_STATS, namespace, found.lexemes, DF_CAP, prepare=prepare
    )
    terms = [(t, known.get(t, 0)) for t in found.lexemes]
    return size[0], size[1], int(row.has_ann), found, terms


def settled_rows(
    conn: Connection, statement: TextClause, params: Mapping[str, Any], *, prepare: bool
) -> Sequence[Any]:
    """The rows of a search's first statement, with the scans an earlier search in the
    transaction may have turned off on again (``PLANNER_DEFAULTS``, same round trip)."""
    steps = [(PLANNER_DEFAULTS, {}), (statement, params)]
    return pipelined(conn, steps, prepare=prepare)[1]


def first_params(
    cfg: str, query: str, namespace: str, settings: RetrievalSettings
) -> dict[str, Any]:
    """The parameters of a search's first statement, which sets ``SEARCH_SETTINGS``."""
    return {
        "cfg": cfg,
        "query": query,
        "namespace": namespace,
        "ef_search": str(settings.ef_search),
        "plan_cache_mode": plan_cache_mode(prepare=settings.prepared_statements),
    }


def plan(conn: Connection, settings: RetrievalSettings, *, force_index: bool, exact: bool) -> None:
    """Planner settings for the next statement: the HNSW walk, or exact scans only."""
    rows(
        conn,
        PLANNER,
        planner(settings, force_index=force_index, exact=exact),
        prepare=settings.prepared_statements,
    )


def planner(settings: RetrievalSettings, *, force_index: bool, exact: bool) -> dict[str, Any]:
    """The parameters of ``PLANNER`` for ``plan``'s settings."""
    # The walk is planned for its namespace (its own HNSW index); the rest as the search.
    mode = (
        "force_custom_plan"
        if force_index
        else plan_cache_mode(prepare=settings.prepared_statements)
    )
    return {
        "ef_search": str(settings.ef_search),
        "other": "off" if force_index else "on",
        "indexscan": "off" if exact else "on",
        "plan_cache_mode": mode,
    }


def neighbours(
    conn: Connection,
    settings: RetrievalSettings,
    params: dict[str, Any],
    n_indexed: int,
    statement: TextClause = ANN_NEIGHBOURS,
) -> dict[str, Int8Array | Float8Array]:
    """HNSW neighbours among indexed rows (memories', or ``statement``'s: document chunks');
    exact when filters starved the index. Either way the exact planner settings hold
    afterwards (the candidates statement needs them). Ids and distances go to it packed
    (``storage.server.binary_arrays``)."""
    if n_indexed == 0:  # a walk of the index would look for rows it cannot hold
        return {"ann_ids": Int8Array(()), "ann_dists": Float8Array(())}
    # The walk between its settings and the exact ones after it: one round trip.
    steps = [
        (PLANNER, planner(settings, force_index=True, exact=False)),
        (statement, params),
        (PLANNER, planner(settings, force_index=False, exact=True)),
    ]
    found: Sequence[Any] = pipelined(conn, steps, prepare=settings.prepared_statements)[1]
    if len(found) < min(params["n"], n_indexed):
        # Planned afresh, under the exact settings: its prepared plan is the walk's.
        found = rows(conn, statement, params, prepare=False)
    ids, dists = Int8Array([r.id for r in found]), Float8Array([r.dist for r in found])
    return {"ann_ids": ids, "ann_dists": dists}
