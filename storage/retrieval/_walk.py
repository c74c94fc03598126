"""The walk of one search (``Retriever``'s base, ``storage.retrieval._search``).

``_search`` walks down the steps: candidates (memories, document chunks, the cold tier),
ranked, the best turns of the sessions the best hits point to and the turns next to the
best brought up, each hit with its passage. ``_first`` runs a check (a key's) in the first
statement's round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection

from storage.embedding import Embedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval._timeframe import QueryTime
from storage.retrieval._types import Hit
from storage.retrieval.candidates import (
    ArchiveReader,
    Before,
    ColdQuery,
    FirstRow,
    Request,
    StatsCache,
    archived_candidates,
    demote,
    document_rows,
    first_row,
    memory_kinds,
    memory_rows,
    pipelined,
    pool_target,
    search_params,
    wants_documents,
)
from storage.retrieval.explain import with_passages
from storage.retrieval.rank import rank, ranked, restated_for, with_context, with_sessions


class Walk:
    """A search's steps over one store: what ``Retriever`` searches with."""

    embedder: Embedder
    settings: RetrievalSettings
    text_search_config: str
    min_cosine: float
    stats: StatsCache
    doc_stats: StatsCache
    archive: ArchiveReader

    def _first(self, conn: Connection, request: Request, before: Before) -> Any:
        """``before`` checked, and the first statement's row if the search reads memories
        (``first_row``: one round trip for both)."""
        kinds = memory_kinds(request.kinds)
        if kinds is None or kinds:
            return first_row(conn, self.settings, self.text_search_config, request, before)
        steps = [(before.statement, before.params)]
        before.check(pipelined(conn, steps, prepare=self.settings.prepared_statements)[0])
        return None

    def _search(
        self,
        conn: Connection,
        request: Request,
        when: QueryTime,
        weights: Mapping[str, float],
        first: Any = None,
    ) -> list[Hit]:
        """The walk: candidates (memories, document chunks, the cold tier), ranked, the
        best turns of the sessions the best point to and the turns next to the best
        brought up, each hit with its passage. ``first``: the first statement's row, if
        ``first_row`` ran it."""
        rows: Sequence[Any] = []
        params: dict[str, Any] | None = None
        found: FirstRow | None = None  # what the memories' first statement found, if it ran
        kinds = memory_kinds(request.kinds)
        if kinds is None or kinds:
            memories = replace(request, kinds=kinds)
            rows, params, found = memory_rows(
                conn, self.settings, memories, self._params(conn, memories, first)
            )
        if wants_documents(request.kinds) and (found is None or found.has_docs):
            cfg, stats = self.text_search_config, self.doc_stats
            rows = [*rows, *document_rows(conn, request, stats, self.settings, cfg, found)]
        if request.include_archived:
            return self._with_archived(conn, request, rows, params, when, weights)
        restated = restated_for(conn, self.settings, request.namespace, rows, when, weights)
        hits = ranked(rows, when, weights, self.settings, self.min_cosine, restated)
        pool = with_sessions(conn, self.settings, params, hits, request.limit, when, weights)
        best = with_context(conn, self.settings, params, pool, request.limit, when, weights)
        return with_passages(best, request.query)

    def _with_archived(
        self,
        conn: Connection,
        request: Request,
        rows: Sequence[Any],
        params: dict[str, Any] | None,
        when: QueryTime,
        weights: Mapping[str, float],
    ) -> list[Hit]:
        """Hot candidates plus the cold tier's, ranked together; archived hits at 0.9x."""
        if not request.include_archived:
            return []
        n = pool_target(request.limit) * self.settings.overfetch
        cold = ColdQuery.of(request, n, self.text_search_config, self.embedder.name)
        found = archived_candidates(conn, self.archive, cold, params)
        every = [*rows, *found]
        restated = restated_for(conn, self.settings, request.namespace, every, when, weights)
        ranked = demote(rank(every, when, weights, self.settings, self.min_cosine, restated))
        pool = with_sessions(conn, self.settings, params, ranked, request.limit, when, weights)
        best = with_context(conn, self.settings, params, pool, request.limit, when, weights)
        return with_passages(best, request.query)

    def _params(
        self, conn: Connection, request: Request, first: Any = None
    ) -> tuple[dict[str, Any], int, FirstRow] | None:
        cfg = self.text_search_config
        return search_params(conn, request, self.settings, self.stats, cfg, first)
