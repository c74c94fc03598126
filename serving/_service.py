"""``MemoryService``: what the HTTP API and the MCP server do, for one grant at a time.

Both are thin shells over this class. Every method takes a ``Grant`` (one namespace, read
only or not) and works inside a transaction scoped to that namespace by the grant's key
(``storage.keys.scope``): with row-level security on (the default) the pool logs in as
``archivist_serving``, which sees only the rows of the namespace a key scoped its
transaction to, even through a query that forgets its filter, and changes them only in a
transaction scoped for writing. Writes go through the durable write queue (``remember``,
``documents.add``) or change one row in place (pin, unpin, forget, ``documents.delete``);
each change is audited with the key's id, never the key. Every id it shows or takes is a
public one (``serving._ids``): the real ids would tell a tenant how much the others wrote.
The documents' part is ``serving._documents``; keys, grants and scoped transactions
``serving._scoped``. A search's accesses are handed to
``accesses`` (``serving._accesses``), which writes them in batches once started.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, text

from serving._accesses import Accesses
from serving._api_models import SearchRequest
from serving._documents import Documents
from serving._errors import Unauthorized
from serving._files import MemoryFiles
from serving._grants import KeyFor
from serving._ids import ShownIds
from serving._scoped import ScopedService
from serving._views import json_row, priming_view
from storage import queue
from storage.embedding import LocalEmbedder
from storage.kernel.errors import InputError
from storage.kernel.settings import Settings
from storage.keys import SCOPE, Grant, granted, scope_params
from storage.operations import serving_reads
from storage.operations.access import SearchAccess
from storage.public_ids import PublicIds
from storage.retrieval import (
    DOC_KIND,
    Citation,
    Context,
    Hit,
    Retriever,
    SearchOptions,
    TimeRange,
    cite,
    search_within,
)
from storage.retrieval.candidates import Before

MAX_EPISODES = 50


class MemoryService(ScopedService):
    """One Retriever, one pool, one memory-file reader: share it across requests."""

    def __init__(
        self, settings: Settings, retriever: Retriever, files: MemoryFiles, ids: ShownIds
    ) -> None:
        self.settings = settings
        self.retriever = retriever
        self.engine: Engine = retriever.engine
        self.files = files
        self.ids = ids
        retriever.shown = ids.hit  # hits leave with public ids
        self.documents = Documents(self)
        self.accesses = Accesses(self.engine, settings.serving.access_batch_seconds)
        self._prepare = settings.retrieval.prepared_statements

    @classmethod
    def open(cls, settings: Settings) -> MemoryService:
        """Check the store and the embedder, then serve as the serving role (unless row-level
        security is turned off in ``ARCHIVIST_SERVING__ROW_LEVEL_SECURITY``)."""
        retriever = Retriever.from_settings(settings, serving=True)
        if isinstance(retriever.embedder, LocalEmbedder):
            retriever.embedder.embed_query("warm up")  # load the model now, not on a request
        with retriever.engine.connect() as conn:
            ids = ShownIds(PublicIds.load(conn))
        return cls(settings, retriever, MemoryFiles.of(settings), ids)

    # -- reading ---------------------------------------------------------------------------

    def search(
        self,
        grant: Grant | KeyFor,
        query: str,
        *,
        limit: int = 10,
        time_range: TimeRange | None = None,
        kinds: Sequence[str] | None = None,
        include_archived: bool = False,
    ) -> list[Citation]:
        """The best memories for ``query``, labelled ``[Memory 1]`` on, with their provenance
        (a ``KeyFor`` checked in the search's own transaction: ``_reading``). The hits'
        accesses go to ``accesses`` when a key scoped the search, else are written in it."""
        now = datetime.now(UTC)
        options = SearchOptions(
            time_range=time_range, kinds=kinds, include_archived=include_archived
        )
        if isinstance(grant, KeyFor):
            return self._search_checked(grant, query, limit, now, options)
        with self._reading(grant) as (conn, granted):
            hits = self.retriever.search(
                granted.namespace,
                query,
                limit=limit,
                as_of=now,
                record_access=granted.credential is None,
                conn=conn,
                options=options,
            )
        if granted.credential is not None:
            self._accessed(granted.credential, granted.namespace, query, now, hits)
        return cite(self.ids.hit(hit) for hit in hits)

    def _search_checked(
        self, presented: KeyFor, query: str, limit: int, now: datetime, options: SearchOptions
    ) -> list[Citation]:
        """``search`` of a key checked in the search's first round trip, with its first
        statement (``Retriever.search_checked``): 401 or 403 before the query is embedded or
        anything read, as ``_reading`` checks it, with two round trips fewer."""
        params = scope_params(self.presented(presented.key))
        if params is None:
            raise Unauthorized("unknown or revoked key")
        grants: list[Grant] = []

        def check(found: Sequence[Any]) -> None:
            grant = granted(found[0] if found else None, params["hash"])
            if grant is None:
                raise Unauthorized("unknown or revoked key")
            self.authorize(grant, presented.namespace)
            grants.append(grant)

        with self._database(), self.engine.begin() as conn:
            hits = self.retriever.search_checked(
                Before(SCOPE, params, check),
                presented.namespace,
                query,
                conn=conn,
                limit=limit,
                as_of=now,
                options=options,
            )
        credential = grants[0].credential
        if credential is not None:
            self._accessed(credential, presented.namespace, query, now, hits)
        return cite(self.ids.hit(hit) for hit in hits)

    def search_within(
        self, grant: Grant | KeyFor, request: SearchRequest, budget_tokens: int
    ) -> Context:
        """The best passages for a search body that fit ``budget_tokens`` tokens, labelled,
        with the tokens they take (``storage.retrieval.search_within``); keys as ``search``."""
        with self._reading(grant) as (conn, granted):
            return search_within(
                self.retriever,
                granted.namespace,
                request.query,
                budget_tokens,
                conn=conn,
                shown=self.ids.hit,
                options=SearchOptions(
                    time_range=request.resolved_time_range(),
                    kinds=request.kinds,
                    include_archived=request.include_archived,
                ),
            )

    def prime(
        self, grant: Grant, message: str | None = None, budget_tokens: int | None = None
    ) -> dict[str, Any]:
        """What to remember when a conversation starts, as data and as text (within
        ``budget_tokens`` tokens when given)."""
        with self._reading(grant) as (conn, _):
            primed = self.retriever.prime(
                grant.namespace, message, conn=conn, budget_tokens=budget_tokens
            )
            return priming_view(primed)

    def get(self, grant: Grant, memory_id: int) -> dict[str, Any]:
        """One memory of the grant's namespace, by its public id; ``NotFound`` for any other
        id."""
        real = self._real(grant, memory_id)
        with self.session(grant) as session:
            found = serving_reads.memory(session, grant.namespace, real)
            if found is None:
                raise self._missing(session, grant, real, memory_id)
        return json_row(self.ids.row(found))

    def recent_episodes(self, grant: Grant, limit: int = 5) -> list[dict[str, Any]]:
        """The latest session summaries, newest first."""
        if not 1 <= limit <= MAX_EPISODES:
            raise InputError(f"limit {limit} out of range 1..{MAX_EPISODES}")
        with self.session(grant) as session:
            rows = serving_reads.recent_episodes(session, grant.namespace, limit)
        return [json_row(self.ids.row(row)) for row in rows]

    def queue_stats(self, grant: Grant) -> dict[str, Any]:
        """The write queue's counts for the grant's namespace."""
        with self.session(grant) as session:
            stats = queue.queue_stats(session, None, self.settings.queue, grant.namespace)
            return stats.as_dict()

    def memory_md(self, grant: Grant) -> str:
        return self.ids.traces(self.files.memory_md(grant.namespace))

    def daily_logs(self, grant: Grant, days: int = 7) -> dict[str, str]:
        logs = self.files.daily_logs(grant.namespace, days)
        return {name: self.ids.traces(text) for name, text in logs.items()}

    def health(self) -> dict[str, Any]:
        """Whether the store answers, and what serves it."""
        with self._database(), self.engine.connect() as conn:
            role = conn.execute(text("SELECT current_user")).scalar_one()
        return {
            "status": "ok",
            "role": role,
            "row_level_security": self.settings.serving.row_level_security,
            "embedder": self.retriever.embedder.name,
        }

    # -- writing ---------------------------------------------------------------------------

    def remember(
        self,
        grant: Grant,
        content: str,
        *,
        kind: str = "note",
        importance: float | None = None,
        occurred_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Queue a memory (the worker embeds and stores it); the same key again is a no-op."""
        self.authorize(grant, grant.namespace, write=True)
        payload: dict[str, Any] = {"content": content, "kind": kind}
        if importance is not None:
            payload["importance"] = importance
        if occurred_at is not None:
            payload["occurred_at"] = occurred_at.isoformat()
        with self.session(grant, write=True) as session:
            queued = queue.enqueue(
                session,
                grant.namespace,
                "ADD_MEMORY",
                payload,
                idempotency_key=idempotency_key,
                settings=self.settings,
            )
            if not queued.duplicate:
                self._audit(session, grant, "remember", f"queue:{queued.id}")
        shown = self.ids.show("queue", queued.id)
        return {"queue_item": shown, "duplicate": queued.duplicate, "status": "queued"}

    def set_pinned(self, grant: Grant, memory_id: int, *, pinned: bool) -> dict[str, Any]:
        """Pin (never ages) or unpin a memory of the grant's namespace."""
        self.authorize(grant, grant.namespace, write=True)
        real = self._real(grant, memory_id)
        with self.session(grant, write=True) as session:
            if not serving_reads.set_pinned(session, grant.namespace, real, pinned=pinned):
                raise self._missing(session, grant, real, memory_id)
            self._audit(session, grant, "pin" if pinned else "unpin", f"memory:{real}")
        return {"memory_id": memory_id, "pinned": pinned}

    def forget(self, grant: Grant, memory_id: int) -> dict[str, Any]:
        """Delete one memory now (a turn's sibling chunks with it)."""
        self.authorize(grant, grant.namespace, write=True)
        real = self._real(grant, memory_id)
        with self.session(grant, write=True) as session:
            if queue.forget_memory(session, grant.namespace, real) != "deleted":
                raise self._missing(session, grant, real, memory_id)
            self._audit(session, grant, "forget_memory", f"memory:{real}")
        return {"memory_id": memory_id, "deleted": True}

    # -- plumbing --------------------------------------------------------------------------

    def _accessed(
        self, credential: str, namespace: str, query: str, at: datetime, hits: Sequence[Hit]
    ) -> None:
        """Hand a search's memory hits to ``accesses``, as ``record_hits`` would write them."""
        # Document chunks are not memories.
        ids = tuple(h.memory_id for h in hits if h.kind != DOC_KIND and h.memory_id is not None)
        if ids:
            context = f"search: {query[:500]}"
            self.accesses.add(SearchAccess(credential, namespace, context, at, ids))
