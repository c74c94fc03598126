"""``Retriever``: composite-scored hybrid search and conversation priming over one store.

Assistants import it as ``from storage.retrieval import Retriever``; it imports no Prefect.

    retriever = Retriever.from_settings(Settings())
    hits = retriever.search("alice", "when is the dentist?", limit=5)
    print(retriever.prime("alice", "Hi! About the trip...").formatted)

Search is scoped to one namespace and walks down its steps (``_walk``): ``candidates``
(the dense top ``limit x overfetch`` united with the lexical top, of memories, document
chunks and, if asked, the cold tier), ``rank`` (relevance fused with the other factors into
one score, all shown in ``Hit.factors``; restatements; the best turns of the sessions the
best hits point to; the turns next to the best hits; one place per message), ``explain``
(each hit's passage).
Bad input raises ``RetrievalError``; an unknown namespace gives ``[]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, tzinfo

import numpy as np
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from storage.embedding import Embedder
from storage.kernel import scoring
from storage.kernel.errors import RetrievalError, StorageError
from storage.kernel.records import NAMESPACE
from storage.kernel.settings import RetrievalSettings, Settings
from storage.retrieval._priming import build_priming
from storage.retrieval._timeframe import read_time
from storage.retrieval._types import Hit, Priming, SearchOptions
from storage.retrieval._walk import Walk
from storage.retrieval.candidates import (
    ArchiveReader,
    Before,
    Request,
    StatsCache,
    aware,
    check_request,
    custom_weights,
    plan_lines,
    resolve_time_range,
)
from storage.retrieval.explain import checked_budget, record_hits

NO_OPTIONS = SearchOptions()
_NO_VECTOR = np.zeros(0, dtype=np.float32)  # a request's, until its query is embedded


class Retriever(Walk):
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
        request, now, used = self._request(namespace, query, limit, as_of, options, embed=True)
        try:
            with self._transaction(conn) as tx:
                hits = self._search(tx, request, read_time(query, now, self.tz), used)
                if record_access and hits:
                    self._record(tx, namespace, hits, query, now)
        except DBAPIError as exc:
            raise StorageError(f"search in namespace {namespace!r} failed: {exc.orig}") from exc
        return hits

    def search_checked(
        self,
        before: Before,
        namespace: str,
        query: str,
        *,
        conn: Connection,
        limit: int = 10,
        as_of: datetime | None = None,
        options: SearchOptions = NO_OPTIONS,
    ) -> list[Hit]:
        """``search`` in the caller's transaction, ``before``'s statement run and checked in
        the search's first round trip, ahead of its first statement and of the query's
        embedding (the API's key check, which then scopes the transaction: the statements
        after it see what the key may see, and nothing if it fails). Records no access."""
        request, now, used = self._request(namespace, query, limit, as_of, options, embed=False)
        try:
            first = self._first(conn, request, before)
            request = replace(request, vector=self.embedder.embed_query(query))
            return self._search(conn, request, read_time(query, now, self.tz), used, first)
        except DBAPIError as exc:
            raise StorageError(f"search in namespace {namespace!r} failed: {exc.orig}") from exc

    def _request(
        self,
        namespace: str,
        query: str,
        limit: int,
        as_of: datetime | None,
        options: SearchOptions,
        *,
        embed: bool,
    ) -> tuple[Request, datetime, Mapping[str, float]]:
        """A search's request checked (with the query's vector if ``embed``), its time and
        its weights."""
        check_request(namespace, query, limit, options.kinds, self.settings.max_limit)
        now = aware(as_of) if as_of is not None else datetime.now(UTC)
        start, end = resolve_time_range(options.time_range, now, self.tz)
        used = self.weights if options.weights is None else custom_weights(options.weights)
        request = Request(
            namespace,
            query,
            self.embedder.embed_query(query) if embed else _NO_VECTOR,
            limit,
            start,
            end,
            options.kinds,
            options.include_archived,
        )
        return request, now, used

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
            lines = plan_lines(conn, self.settings, params, n_indexed)
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

    def _record(
        self, conn: Connection, namespace: str, hits: Sequence[Hit], query: str, at: datetime
    ) -> None:
        record_hits(conn, namespace, hits, query, at, prepare=self.settings.prepared_statements)
