"""``api_keys``: namespace keys for the HTTP API and the MCP server, stored only as hashes.

A key is ``ak_`` and 43 random URL-safe characters (256 bits), shown once when created.
The table keeps its SHA-256 (a key of that entropy needs no slow hash), the first
characters to tell keys apart in a listing, the namespace and whether it may write. The
serving role cannot read the table: it presents a key's hash to the database function
``archivist_scope`` (migration 0024), which answers for that key alone and scopes the
transaction to the key's namespace, the only scope the serving role's policies trust.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, TextClause, text
from sqlalchemy.orm import Session

from storage.kernel.errors import InputError
from storage.kernel.records import NAMESPACE

PREFIX = "ak_"
SHOWN = 10  # characters of a key kept for listings: "ak_" and 7 of its random part

CREATE = text(
    """
    INSERT INTO api_keys (namespace, key_hash, prefix, read_only, label)
    VALUES (:namespace, :key_hash, :prefix, :read_only, :label) RETURNING id
    """
)
LIST = text(
    """
    SELECT id, namespace, prefix, read_only, label, created_at, revoked_at, last_used_at
    FROM api_keys WHERE CAST(:namespace AS text) IS NULL OR namespace = :namespace
    ORDER BY namespace, id
    """
)
REVOKE = text(
    """
    UPDATE api_keys SET revoked_at = coalesce(revoked_at, :now) WHERE id = :id
    RETURNING namespace
    """
)
SCOPE = text("SELECT key_id, namespace, read_only, revoked FROM archivist_scope(:hash, :write)")


@dataclass(frozen=True)
class KeyInfo:
    """A key as listed: never the key itself."""

    id: int
    namespace: str
    prefix: str
    read_only: bool
    label: str | None
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


@dataclass(frozen=True)
class Grant:
    """What a presented key allows: one namespace, reading only or writing too."""

    key_id: int | None  # None: bound by configuration, not by a key (no row-level security)
    namespace: str
    read_only: bool
    # The key's hash, which scopes a transaction to the namespace (``scope``).
    credential: str | None = field(default=None, repr=False, compare=False)
    # Read only by the server's configuration (``archivist mcp --read-only``), whatever
    # the key may do.
    narrowed: bool = False

    @property
    def actor(self) -> str:
        return "config" if self.key_id is None else f"key:{self.key_id}"


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(
    session: Session, namespace: str, *, read_only: bool = False, label: str | None = None
) -> tuple[int, str]:
    """A new key for ``namespace``: its id and the key, which is not stored and not shown
    again."""
    if not NAMESPACE.fullmatch(namespace):
        raise InputError(f"bad namespace {namespace!r}: lowercase letters, digits, '.', '_', '-'")
    if label is not None and not 1 <= len(label) <= 100:
        raise InputError("a key's label is 1 to 100 characters")
    key = PREFIX + secrets.token_urlsafe(32)
    params = {
        "namespace": namespace,
        "key_hash": key_hash(key),
        "prefix": key[:SHOWN],
        "read_only": read_only,
        "label": label,
    }
    return int(session.execute(CREATE, params).scalar_one()), key


def list_keys(session: Session, namespace: str | None = None) -> list[KeyInfo]:
    return [KeyInfo(**row) for row in session.execute(LIST, {"namespace": namespace}).mappings()]


def revoke_key(session: Session, key_id: int, now: datetime) -> str | None:
    """Revoke a key (again is harmless); its namespace, or None if there is no such key."""
    found = session.execute(REVOKE, {"id": key_id, "now": now}).scalar()
    return None if found is None else str(found)


# Runs a statement on a connection and returns its first row (or None).
FirstRow = Callable[[Connection, TextClause, Mapping[str, Any]], Any]


def _first(conn: Connection, statement: TextClause, params: Mapping[str, Any]) -> Any:
    return conn.execute(statement, params).first()


def resolve_key(
    conn: Connection, key: str, *, write: bool = False, first: FirstRow = _first
) -> Grant | None:
    """The grant of a valid key, with this transaction scoped to its namespace (for writing
    too with ``write``, if the key may write); None for an unknown or revoked one (or not a
    key at all), and then the transaction has no scope. ``first`` runs the scoping statement
    (a search runs it as its own statements: ``serving._grants``)."""
    params = scope_params(key, write=write)
    if params is None:
        return None
    return granted(first(conn, SCOPE, params), params["hash"])


def scope_params(key: str, *, write: bool = False) -> dict[str, Any] | None:
    """The parameters of ``SCOPE`` for a presented key; None for what is not a key at all
    (no need to ask the store)."""
    if not key.startswith(PREFIX) or len(key) > 200:
        return None
    return {"hash": key_hash(key), "write": write}


def granted(row: Any, hashed: str) -> Grant | None:
    """The grant of ``SCOPE``'s row (None: no row) for the key of hash ``hashed``; None for
    an unknown or revoked key."""
    if row is None or row.revoked:
        return None
    return Grant(int(row.key_id), str(row.namespace), row.read_only, credential=hashed)


def scope(conn: Connection, grant: Grant, *, write: bool = False) -> bool:
    """Scope this transaction to the grant's namespace by its key again (``write``: for
    writing too, if the key may write); False when the key no longer holds (revoked or
    deleted since) or the grant has none."""
    if grant.credential is None:
        return False
    row = conn.execute(SCOPE, {"hash": grant.credential, "write": write}).first()
    return row is not None and not row.revoked and str(row.namespace) == grant.namespace
