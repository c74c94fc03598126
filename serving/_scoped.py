"""The grant-scoped plumbing of ``MemoryService`` (``serving._service``): who may do what,
and transactions scoped to a grant's namespace by its key.

A key is resolved to a ``Grant`` (``authenticate``, ``check``: 401 without a valid one) and
judged for a namespace and a write (``authorize``: 403, audited under the key's own
namespace). ``session`` and ``_reading`` open a transaction scoped by the grant's key
(``storage.keys.scope``): under row-level security the serving role sees nothing of a
namespace otherwise. A store failure becomes ``ServiceUnavailable``; public ids that are
none, and memories of another namespace, ``NotFound``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from serving._errors import Conflict, Forbidden, NotFound, ServiceUnavailable, Unauthorized
from serving._grants import KeyFor, presented, resolved
from serving._ids import ShownIds
from storage import audit
from storage.kernel.settings import Settings
from storage.keys import Grant, scope
from storage.operations import serving_reads


class ScopedService:
    """Keys, grants and scoped transactions over one pool: ``MemoryService``'s base."""

    settings: Settings
    engine: Engine
    ids: ShownIds
    _prepare: bool

    # -- who may do what -------------------------------------------------------------------

    presented = staticmethod(presented)

    def authenticate(self, key: str | None) -> Grant:
        """The grant of a presented key; ``Unauthorized`` without a valid one."""
        # One statement in autocommit: no BEGIN and COMMIT round trips on every request.
        with self._database(), self.engine.connect() as conn:
            autocommit = conn.execution_options(isolation_level="AUTOCOMMIT")
            return resolved(autocommit, key, prepare=self._prepare)

    def check(
        self, presented: KeyFor, *, write: bool = False, conn: Connection | None = None
    ) -> Grant:
        """The grant of a key presented for a namespace: 401 without a valid key, 403 for
        another namespace or a read-only key's write. ``conn``: resolve the key there (the
        caller's transaction) rather than on a connection of its own."""
        if conn is None:
            grant = self.authenticate(presented.key)
        else:
            grant = resolved(conn, presented.key, prepare=self._prepare)
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
            if grant.key_id is None or grant.narrowed:  # the configuration's, not the key's
                raise Forbidden("this server is read-only (started with --read-only)")
            raise Forbidden("this key is read-only")

    # -- plumbing --------------------------------------------------------------------------

    @contextmanager
    def session(self, grant: Grant, *, write: bool = False) -> Iterator[Session]:
        """A transaction scoped to the grant's namespace (``write``: for writing too),
        committed when the block ends."""
        with self._database(), Session(self.engine) as session, session.begin():
            self._scope(session.connection(), grant, write=write)
            yield session

    @contextmanager
    def _reading(self, grant: Grant | KeyFor) -> Iterator[tuple[Connection, Grant]]:
        """A transaction scoped by the grant's key; a ``KeyFor`` is checked (401, 403) in it,
        so a search takes one connection, not two, and one statement for key and scope."""
        with self._database(), self.engine.begin() as conn:
            if isinstance(grant, KeyFor):
                yield conn, self.check(grant, conn=conn)  # which scopes the transaction
            else:
                self._scope(conn, grant)
                yield conn, grant

    def _scope(self, conn: Connection, grant: Grant, *, write: bool = False) -> None:
        """Scope the transaction by the grant's key: under row-level security the serving
        role sees nothing otherwise. ``Unauthorized`` once the key no longer holds."""
        if self.settings.serving.row_level_security and not scope(conn, grant, write=write):
            raise Unauthorized("unknown or revoked key")

    @contextmanager
    def _database(self) -> Iterator[None]:
        try:
            yield
        except DBAPIError as exc:  # its text is for the server's log (error_reply), not a client
            raise ServiceUnavailable(f"the store failed: {exc.orig}") from exc

    def _real(self, grant: Grant, memory_id: int) -> int:
        """The real id behind a public memory id; ``NotFound`` for a number that is none."""
        real = self.ids.take("memory", memory_id)
        if real is None:
            raise NotFound(f"no memory {memory_id} in namespace {grant.namespace!r}")
        return real

    def _missing(self, session: Session, grant: Grant, real: int, shown: int) -> Exception:
        if serving_reads.archived(session, grant.namespace, real):
            return Conflict(f"memory {shown} is archived; restore it first (archivist restore)")
        return NotFound(f"no memory {shown} in namespace {grant.namespace!r}")

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
