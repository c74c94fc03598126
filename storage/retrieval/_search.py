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

from collections.abc import Iterator, Mapping, Sequence
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
from storage.retrieval._candidates import (
    Request,
    neighbours,
    plan,
    pool_target,
    search_params,
)
from storage.retrieval._documents import document_rows, memory_kinds, wants_documents
from storage.retrieval._inputs import (
    aware,
    check_request,
    custom_weights,
    resolve_time_range,
)
from storage.retrieval._prepared import execute, rows
from storage.retrieval._priming import build_priming
from storage.retrieval._ranking import distinct_messages, one_per_source, rank, ranked
from storage.retrieval._restated import Restated, candidate_vectors, memory_ids, restatements
from storage.retrieval._sql import (
    CANDIDATES,
    EXPLAIN_ANN,
    EXPLAIN_CANDIDATES,
    RECORD_ACCESS,
)
from storage.retrieval._stats import StatsCache
from storage.retrieval._timeframe import QueryTime, read_time
from storage.retrieval._types import DOC_KIND, Hit, Priming, SearchOptions
from storage.server.scoped import scope

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

    @classmethod
    def from_settings(cls, settings: Settings, *, serving: bool = False) -> Retriever:
        """Open the configured store and embedder, checking that both fit the schema.

        ``serving``: search through the serving pool (``storage.server.scoped``): the serving role,
        which sees one namespace per transaction, unless row-level security is turned off;
        the checks above still run as the store's role.
        """
        from sqlalchemy.orm import Session

        from storage.meta import read_facts
        from storage.server.connect import connect
        from storage.server.scoped import open_serving_engine

        store, embedder = connect(settings)
        with Session(store.engine) as session:
            config = read_facts(session).get("text_search_config", "english")
        engine = open_serving_engine(settings) if serving else store.engine
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
        hit as an access.

        ``conn``: search inside the caller's transaction, which the caller has bound to
        ``namespace`` (``scope(relaxed=True)``, or the API's key check in the same statement)
        and commits, instead of one of its own (bound here)."""
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
                if conn is None:
                    scope(tx, namespace, relaxed=True)
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
    ) -> Priming:
        """What to remember when a conversation starts (seed 003), with readable text."""
        if not NAMESPACE.fullmatch(namespace):
            raise RetrievalError(
                f"bad namespace {namespace!r}: lowercase letters, digits, '.', '_', '-'"
            )
        now = aware(as_of) if as_of is not None else datetime.now(UTC)
        try:
            return build_priming(self, namespace, initial_message, now, record_access=record_access)
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
        return one_per_source(hits, request.limit)

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
        return one_per_source(ranked)[: request.limit]

    def explain_plan(
        self, namespace: str, query: str, *, limit: int = 10, kinds: Sequence[str] | None = None
    ) -> str:
        """PostgreSQL's plan for this search (which index serves which namespace)."""
        check_request(namespace, query, limit, kinds, self.settings.max_limit)
        request = Request(namespace, query, self.embedder.embed_query(query), limit, kinds=kinds)
        with self.engine.connect() as conn:
            scope(conn, namespace)
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
        ids = [h.memory_id for h in hits if h.kind != DOC_KIND]  # chunks are not memories
        if ids:
            context = f"search: {query[:500]}"
            params = {"namespace": namespace, "ids": ids, "context": context, "at": at}
            execute(conn, RECORD_ACCESS, params, prepare=self.settings.prepared_statements)
