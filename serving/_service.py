"""``MemoryService``: what the HTTP API and the MCP server do, for one grant at a time.

Both are thin shells over this class. Every method takes a ``Grant`` (one namespace, read
only or not) and works inside a transaction scoped to that namespace: with row-level
security on (the default) the pool logs in as ``archivist_serving`` and cannot see another
namespace's rows even through a query that forgets its filter. Writes go through the
durable write queue (``remember``, ``documents.add``) or change one row in place (pin,
unpin, forget, ``documents.delete``); each change is audited with the key's id, never the
key. The documents' part is ``serving._documents``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from serving._documents import Documents
from serving._errors import Conflict, Forbidden, NotFound, ServiceUnavailable, Unauthorized
from serving._files import MemoryFiles
from serving._views import json_row, priming_view
from storage import audit, queue
from storage.embedding import LocalEmbedder
from storage.kernel.errors import InputError
from storage.kernel.settings import Settings
from storage.keys import Grant, resolve_key
from storage.operations import serving_reads
from storage.retrieval import Citation, Retriever, SearchOptions, TimeRange, cite
from storage.server.scoped import scope

MAX_EPISODES = 50


@dataclass(frozen=True)
class KeyFor:
    """A key presented for a namespace, not checked yet (the API's search checks it)."""

    key: str
    namespace: str


class MemoryService:
    """One Retriever, one pool, one memory-file reader: share it across requests."""

    def __init__(self, settings: Settings, retriever: Retriever, files: MemoryFiles) -> None:
        self.settings = settings
        self.retriever = retriever
        self.engine: Engine = retriever.engine
        self.files = files
        self.documents = Documents(self)

    @classmethod
    def open(cls, settings: Settings) -> MemoryService:
        """Check the store and the embedder, then serve as the serving role (unless row-level
        security is turned off in ``ARCHIVIST_SERVING__ROW_LEVEL_SECURITY``)."""
        retriever = Retriever.from_settings(settings, serving=True)
        if isinstance(retriever.embedder, LocalEmbedder):
            retriever.embedder.embed_query("warm up")  # load the model now, not on a request
        return cls(settings, retriever, MemoryFiles.of(settings))

    # -- who may do what -------------------------------------------------------------------

    @staticmethod
    def presented(key: str | None) -> str:
        """The key, or ``Unauthorized`` when none was sent (no need to ask the store)."""
        if not key:
            raise Unauthorized("no key: send Authorization: Bearer <key> (archivist keys create)")
        return key

    def authenticate(self, key: str | None) -> Grant:
        """The grant of a presented key; ``Unauthorized`` without a valid one."""
        # One statement in autocommit: no BEGIN and COMMIT round trips on every request.
        with self._database(), self.engine.connect() as conn:
            return _resolved(conn.execution_options(isolation_level="AUTOCOMMIT"), key)

    def check(
        self, presented: KeyFor, *, write: bool = False, conn: Connection | None = None
    ) -> Grant:
        """The grant of a key presented for a namespace: 401 without a valid key, 403 for
        another namespace or a read-only key's write. ``conn``: resolve the key there (the
        caller's transaction), which the same statement binds to the namespace asked for as
        a search binds it (``resolve_key``), rather than on a connection of its own."""
        if conn is None:
            grant = self.authenticate(presented.key)
        else:
            grant = _resolved(conn, presented.key, scope=presented.namespace)
        self.authorize(grant, presented.namespace, write=write)
        return grant

    def authorize(self, grant: Grant, namespace: str, *, write: bool = False) -> None:
        """Refuse (403) a namespace other than the grant's, or a write with a read-only key;
        the refusal is audited under the key's own namespace."""
        if namespace != grant.namespace:
            self._refused(grant, "other_namespace")
            raise Forbidden(f"this key is for another namespace than {namespace!r}")
        if write and grant.read_only:
            self._refused(grant, "read_only")
            if grant.key_id is None:  # bound by configuration: there is no key to blame
                raise Forbidden("this server is read-only (started with --read-only)")
            raise Forbidden("this key is read-only")

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
        """The best memories for ``query``, labelled ``[Memory 1]`` on, with their provenance.

        A ``KeyFor`` is checked (401, 403) in the search's own transaction, by the statement
        that binds it to the namespace: the API's most frequent request takes one connection,
        not two, and one round trip for its key and scope."""
        with self._database(), self.engine.begin() as conn:
            if isinstance(grant, KeyFor):
                grant = self.check(grant, conn=conn)  # and binds it to the namespace
            else:
                scope(conn, grant.namespace, relaxed=True)
            hits = self.retriever.search(
                grant.namespace,
                query,
                limit=limit,
                conn=conn,
                options=SearchOptions(
                    time_range=time_range, kinds=kinds, include_archived=include_archived
                ),
            )
        return cite(hits)

    def prime(self, grant: Grant, message: str | None = None) -> dict[str, Any]:
        """What to remember when a conversation starts, as data and as text."""
        with self._database():
            return priming_view(self.retriever.prime(grant.namespace, message))

    def get(self, grant: Grant, memory_id: int) -> dict[str, Any]:
        """One memory of the grant's namespace; ``NotFound`` for any other id."""
        with self.session(grant) as session:
            found = serving_reads.memory(session, grant.namespace, memory_id)
            if found is None:
                raise self._missing(session, grant, memory_id)
        return json_row(found)

    def recent_episodes(self, grant: Grant, limit: int = 5) -> list[dict[str, Any]]:
        """The latest session summaries, newest first."""
        if not 1 <= limit <= MAX_EPISODES:
            raise InputError(f"limit {limit} out of range 1..{MAX_EPISODES}")
        with self.session(grant) as session:
            rows = serving_reads.recent_episodes(session, grant.namespace, limit)
        return [json_row(row) for row in rows]

    def queue_stats(self, grant: Grant) -> dict[str, Any]:
        """The write queue's counts for the grant's namespace."""
        with self.session(grant) as session:
            stats = queue.queue_stats(session, None, self.settings.queue, grant.namespace)
            return stats.as_dict()

    def memory_md(self, grant: Grant) -> str:
        return self.files.memory_md(grant.namespace)

    def daily_logs(self, grant: Grant, days: int = 7) -> dict[str, str]:
        return self.files.daily_logs(grant.namespace, days)

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
        with self.session(grant) as session:
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
        return {"queue_item": queued.id, "duplicate": queued.duplicate, "status": "queued"}

    def set_pinned(self, grant: Grant, memory_id: int, *, pinned: bool) -> dict[str, Any]:
        """Pin (never ages) or unpin a memory of the grant's namespace."""
        self.authorize(grant, grant.namespace, write=True)
        with self.session(grant) as session:
            if not serving_reads.set_pinned(session, grant.namespace, memory_id, pinned=pinned):
                raise self._missing(session, grant, memory_id)
            self._audit(session, grant, "pin" if pinned else "unpin", f"memory:{memory_id}")
        return {"memory_id": memory_id, "pinned": pinned}

    def forget(self, grant: Grant, memory_id: int) -> dict[str, Any]:
        """Delete one memory now (a turn's sibling chunks with it)."""
        self.authorize(grant, grant.namespace, write=True)
        with self.session(grant) as session:
            if queue.forget_memory(session, grant.namespace, memory_id) != "deleted":
                raise self._missing(session, grant, memory_id)
            self._audit(session, grant, "forget_memory", f"memory:{memory_id}")
        return {"memory_id": memory_id, "deleted": True}

    # -- plumbing --------------------------------------------------------------------------

    @contextmanager
    def session(self, grant: Grant) -> Iterator[Session]:
        """A transaction scoped to the grant's namespace, committed when the block ends."""
        with self._database(), Session(self.engine) as session, session.begin():
            scope(session.connection(), grant.namespace)
            yield session

    @contextmanager
    def _database(self) -> Iterator[None]:
        try:
            yield
        except DBAPIError as exc:  # its text is for the server's log (error_reply), not a client
            raise ServiceUnavailable(f"the store failed: {exc.orig}") from exc

    def _missing(self, session: Session, grant: Grant, memory_id: int) -> Exception:
        if serving_reads.archived(session, grant.namespace, memory_id):
            return Conflict(f"memory {memory_id} is archived; restore it first (archivist restore)")
        return NotFound(f"no memory {memory_id} in namespace {grant.namespace!r}")

    def _audit(self, session: Session, grant: Grant, action: str, target: str) -> None:
        audit.record(session, action, actor=grant.actor, namespace=grant.namespace, target=target)

    def _refused(self, grant: Grant, reason: str) -> None:
        with self.session(grant) as session:
            audit.record(
                session,
                "refused",
                actor=grant.actor,
                namespace=grant.namespace,
                details={"reason": reason},
            )


def _resolved(conn: Connection, key: str | None, *, scope: str | None = None) -> Grant:
    """The grant of a presented key; ``Unauthorized`` without a valid one (``scope``: as
    ``resolve_key``'s)."""
    grant = resolve_key(conn, MemoryService.presented(key), scope=scope)
    if grant is None:
        raise Unauthorized("unknown or revoked key")
    return grant
