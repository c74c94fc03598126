"""``Retriever``: composite-scored hybrid search and conversation priming over one store.

Assistants import it as ``from storage.retrieval import Retriever``; it imports no Prefect.

    retriever = Retriever.from_settings(Settings())
    hits = retriever.search("alice", "when is the dentist?", limit=5)
    print(retriever.prime("alice", "Hi! About the trip...").formatted)

Search is scoped to one namespace. Candidates (``_candidates``) are the dense top
``limit x overfetch`` united with the lexical top; ``_ranking`` scores them and keeps one
hit per message (a long message's best chunk). Each hit's
score is a weighted sum of named factors (``storage.kernel.scoring``), all shown in ``Hit.factors``.
Bad input raises ``RetrievalError``; an unknown namespace gives ``[]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from storage.embedding import Embedder
from storage.kernel import scoring
from storage.kernel.errors import RetrievalError, StorageError
from storage.kernel.records import NAMESPACE
from storage.kernel.settings import RetrievalSettings, Settings
from storage.retrieval._archived import ArchiveReader, ColdQuery, archived_candidates, demote
from storage.retrieval._budget import checked_budget, record_hits
from storage.retrieval._candidates import (
    Request,
    neighbours,
    plan,
    pool_target,
    search_params,
)
from storage.retrieval._context import anchors, in_context, neighbour_rows
from storage.retrieval._documents import document_rows, memory_kinds, wants_documents
from storage.retrieval._inputs import (
    aware,
    check_request,
    custom_weights,
    resolve_time_range,
)
from storage.retrieval._prepared import rows
from storage.retrieval._priming import build_priming
from storage.retrieval._ranking import (
    distinct_messages,
    one_per_source,
    rank,
    ranked,
    weights_for,
)
from storage.retrieval._restated import Restated, candidate_vectors, memory_ids, restatements
from storage.retrieval._sql import (
    CANDIDATES,
    EXPLAIN_ANN,
    EXPLAIN_CANDIDATES,
)
from storage.retrieval._stats import StatsCache
from storage.retrieval._timeframe import QueryTime, read_time
from storage.retrieval._types import Hit, Priming, SearchOptions
from storage.retrieval.passage import with_passages
from storage.server.scoped import relax_commit

NO_OPTIONS = SearchOptions()


class Retriever:
    """Search and priming over one store; thread-safe (each call uses its own connection)."""

    def __init__(
        self,
        engine: Engine,
        embedder: Embedder,
        settings: RetrievalSettings | None = None,
        tz: tzinfo = UTC,
        text_search_config: str = "english",
    ) -> None:
        self.engine = engine
        self.embedder = embedder
        self.settings = settings or RetrievalSettings()
        self.tz = tz
        self.text_search_config = text_search_config
        self.weights = scoring.resolve_weights(self.settings.preset, self.settings.weights)
        floor = self.settings.min_cosine
        self.min_cosine = float(getattr(embedder, "min_cosine", 0.0)) if floor is None else floor
        self.stats = StatsCache(self.settings.stats_ttl_seconds)
        self.doc_stats = StatsCache(self.settings.stats_ttl_seconds)  # of document chunks
        self.archive = ArchiveReader()  # how include_archived opens the cold tier's files
        # How priming's facts leave: as stored (None), or with the ids a tenant is shown
        # (``serving``: storage.public_ids); search's hits keep the store's, and whoever
        # shows them maps them (``serving``, ``search_within``).
        self.shown: Callable[[Hit], Hit] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, *, serving: bool = False) -> Retriever:
        """Open the configured store and embedder, checking that both fit the schema.

        ``serving``: connect only through the serving pool (``storage.server.scoped``): the
        serving role, which sees one namespace per transaction, scoped by a key
        (``storage.keys``), unless row-level security is turned off. Else the pipeline's
        role (``storage.server.engine``), which sees every namespace.
        """
        from sqlalchemy.orm import Session

        from storage.meta import read_facts
        from storage.server.connect import checked_embedder, connect
        from storage.server.scoped import open_serving_engine

        if serving:
            engine = open_serving_engine(settings)
            embedder = checked_embedder(engine, settings)
        else:
            store, embedder = connect(settings)
            engine = store.engine
        with Session(engine) as session:
            config = read_facts(session).get("text_search_config", "english")
        retriever = cls(engine, embedder, settings.retrieval, settings.tz, config)
        retriever.archive = ArchiveReader(options=settings.storage_options)
        return retriever

    def search(
        self,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        as_of: datetime | None = None,
        record_access: bool = True,
        options: SearchOptions = NO_OPTIONS,
        conn: Connection | None = None,
    ) -> list[Hit]:
        """The ``limit`` best memories of ``namespace`` for ``query``, best first, as of
        ``as_of`` (now); ``options`` narrow or reweigh it; ``record_access``: count each
        hit as an access. Hits carry the store's ids (``self.shown`` is priming's).

        ``conn``: search inside the caller's transaction (committed by the caller) instead
        of one of its own; under the serving role, the caller scoped it by a key
        (``storage.keys``), and a transaction of its own sees nothing."""
        check_request(namespace, query, limit, options.kinds, self.settings.max_limit)
        now = aware(as_of) if as_of is not None else datetime.now(UTC)
        start, end = resolve_time_range(options.time_range, now, self.tz)
        used = self.weights if options.weights is None else custom_weights(options.weights)
        request = Request(
            namespace,
            query,
            self.embedder.embed_query(query),
            limit,
            start,
            end,
            options.kinds,
            options.include_archived,
        )
        try:
            with self._transaction(conn) as tx:
                relax_commit(tx)
                hits = self._search(tx, request, read_time(query, now, self.tz), used)
                if record_access and hits:
                    self._record(tx, namespace, hits, query, now)
        except DBAPIError as exc:
            raise StorageError(f"search in namespace {namespace!r} failed: {exc.orig}") from exc
        return hits

    def prime(
        self,
        namespace: str,
        initial_message: str | None = None,
        *,
        as_of: datetime | None = None,
        record_access: bool = True,
        conn: Connection | None = None,
        budget_tokens: int | None = None,
    ) -> Priming:
        """What to remember when a conversation starts (seed 003), with readable text (within
        ``budget_tokens`` tokens when given); ``conn``: in the caller's transaction (as
        ``search``)."""
        budget = None if budget_tokens is None else checked_budget(budget_tokens)
        if not NAMESPACE.fullmatch(namespace):
            raise RetrievalError(
                f"bad namespace {namespace!r}: lowercase letters, digits, '.', '_', '-'"
            )
        now = aware(as_of) if as_of is not None else datetime.now(UTC)
        try:
            return build_priming(
                self,
                namespace,
                initial_message,
                now,
                record_access=record_access,
                conn=conn,
                budget=budget,
            )
        except DBAPIError as exc:
            raise StorageError(f"priming namespace {namespace!r} failed: {exc.orig}") from exc

    def query_vector(self, namespace: str, query: str, *, what: str = "query") -> np.ndarray:
        """The query's vector, once the request is known to be well-formed (errors name it
        ``what``)."""
        check_request(namespace, query, 1, None, self.settings.max_limit, what=what)
        return self.embedder.embed_query(query)

    def search_in(
        self,
        conn: Connection,
        namespace: str,
        query: str,
        vector: np.ndarray,
        limit: int,
        kinds: Sequence[str] | None,
        now: datetime,
    ) -> list[Hit]:
        """Search inside the caller's transaction for a query embedded by `query_vector`
        (priming uses it); records no access."""
        check_request(namespace, query, limit, kinds, self.settings.max_limit)
        request = Request(namespace, query, vector, limit, kinds=kinds)
        return self._search(conn, request, read_time(query, now, self.tz), self.weights)

    def _search(
        self, conn: Connection, request: Request, when: QueryTime, weights: Mapping[str, float]
    ) -> list[Hit]:
        rows: Sequence[Any] = []
        params: dict[str, Any] | None = None
        has_docs = True  # unless the memories' statement said otherwise
        kinds = memory_kinds(request.kinds)
        if kinds is None or kinds:
            rows, params, has_docs = self._memory_rows(conn, replace(request, kinds=kinds))
        if wants_documents(request.kinds) and has_docs:
            cfg = self.text_search_config
            rows = [*rows, *document_rows(conn, request, self.doc_stats, self.settings, cfg)]
        if request.include_archived:
            return self._with_archived(conn, request, rows, params, when, weights)
        restated = self._restated(conn, request.namespace, rows, when, weights)
        hits = ranked(rows, when, weights, self.settings, self.min_cosine, restated)
        return self._in_context(conn, request, params, hits, when, weights)

    def _in_context(
        self,
        conn: Connection,
        request: Request,
        params: dict[str, Any] | None,
        hits: Iterable[Hit],
        when: QueryTime,
        weights: Mapping[str, float],
    ) -> list[Hit]:
        """The first ``limit`` hits, one place per source, with the turns next to the best
        ones brought up if ``context`` is weighted (``_context``; one more statement): from
        one pool for every ``limit`` up to ``POOL_HITS``; each with its passage."""
        share = weights.get("context", 0.0)
        if not share or params is None:
            return with_passages(one_per_source(hits, request.limit), request.query)
        pool = one_per_source(hits, pool_target(request.limit))
        ids = anchors(pool)
        if not ids:
            return with_passages(pool[: request.limit], request.query)
        prepare = self.settings.prepared_statements
        found = neighbour_rows(conn, params, ids, prepare=prepare)
        used = weights_for(weights, when)
        half_life = self.settings.half_life_days
        best = one_per_source(in_context(pool, found, share, when, used, half_life), request.limit)
        return with_passages(best, request.query)

    def _restated(
        self,
        conn: Connection,
        namespace: str,
        rows: Sequence[Any],
        when: QueryTime,
        weights: Mapping[str, float],
    ) -> Restated | None:
        """Which candidates newer ones restate, for a question about now that weighs
        ``supersede`` (one more statement: the candidates' embeddings); else None."""
        ids = memory_ids(rows)
        if not (when.about_now and weights.get("supersede") and ids):
            return None
        prepare = self.settings.prepared_statements
        return restatements(rows, candidate_vectors(conn, namespace, ids, prepare=prepare))

    def _memory_rows(
        self, conn: Connection, request: Request
    ) -> tuple[Sequence[Any], dict[str, Any] | None, bool]:
        """The memories' candidate rows, their statement's parameters (None: no memory), and
        whether the namespace may have document chunks."""
        prepared = self._params(conn, request)
        if prepared is None:
            return [], None, True
        params, n_indexed, has_docs = prepared
        rows = self._candidates(conn, params, n_indexed)
        # A long message's chunks can fill the pool and then count once: widen it, twice at
        # most, while that leaves fewer distinct messages than asked for.
        for _ in range(2):
            if len(rows) < params["n"] or distinct_messages(rows) >= pool_target(request.limit):
                break
            params |= {"n": params["n"] * 4, "n_lexical": max(params["n"] * 4, 50)}
            rows = self._candidates(conn, params, n_indexed)
        return rows, params, has_docs

    def _candidates(
        self, conn: Connection, params: dict[str, Any], n_indexed: int
    ) -> Sequence[Any]:
        # Bitmap scans only (the exact settings that lexical_stats and neighbours leave):
        # the planner otherwise walks a whole large namespace through a btree to test
        # the lexemes row by row (45 ms at 18k rows, against 5 via GIN).
        params |= neighbours(conn, self.settings, params, n_indexed)
        return rows(conn, CANDIDATES, params, prepare=self.settings.prepared_statements)

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
        restated = self._restated(conn, request.namespace, every, when, weights)
        ranked = demote(rank(every, when, weights, self.settings, self.min_cosine, restated))
        return self._in_context(conn, request, params, ranked, when, weights)

    def explain_plan(
        self, namespace: str, query: str, *, limit: int = 10, kinds: Sequence[str] | None = None
    ) -> str:
        """PostgreSQL's plan for this search (which index serves which namespace)."""
        check_request(namespace, query, limit, kinds, self.settings.max_limit)
        request = Request(namespace, query, self.embedder.embed_query(query), limit, kinds=kinds)
        with self.engine.connect() as conn:
            prepared = self._params(conn, request)
            if prepared is None:
                return "empty namespace: no plan"
            params, n_indexed, _ = prepared
            lines: list[str] = []
            if n_indexed:
                plan(conn, self.settings, force_index=True, exact=False)
                lines += conn.execute(EXPLAIN_ANN, params).scalars().all()
            params |= {"ann_ids": [], "ann_dists": []}
            plan(conn, self.settings, force_index=False, exact=True)
            lines += conn.execute(EXPLAIN_CANDIDATES, params).scalars().all()
            conn.rollback()
        return "\n".join(lines)

    @contextmanager
    def _transaction(self, conn: Connection | None) -> Iterator[Connection]:
        """The caller's connection, or a transaction of this retriever's own."""
        if conn is not None:
            yield conn
            return
        with self.engine.begin() as own:
            yield own

    def _params(
        self, conn: Connection, request: Request
    ) -> tuple[dict[str, Any], int, bool] | None:
        return search_params(conn, request, self.settings, self.stats, self.text_search_config)

    def _record(
        self, conn: Connection, namespace: str, hits: Sequence[Hit], query: str, at: datetime
    ) -> None:
        record_hits(conn, namespace, hits, query, at, prepare=self.settings.prepared_statements)
