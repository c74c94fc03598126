"""``api_keys``: namespace keys for the HTTP API and the MCP server, stored only as hashes.

A key is ``ak_`` and 43 random URL-safe characters (256 bits), shown once when created.
The table keeps its SHA-256 (a key of that entropy needs no slow hash), the first
characters to tell keys apart in a listing, the namespace and whether it may write. The
serving role cannot read the table: it resolves one presented key through the database
function ``archivist_key_grant`` (migration 0015).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text
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
GRANT = text("SELECT key_id, namespace, read_only, revoked FROM archivist_key_grant(:hash)")
# A search's first statement: the key's grant, and the transaction bound to the namespace
# asked for as a search binds it (``storage.server.scoped.SCOPE_RELAXED``), in one round
# trip. The function reads as its owner, unbound; the caller reads nothing under the scope
# before it has judged the grant (a refusal rolls the transaction back).
GRANT_AND_SCOPE = text(
    """
    SELECT g.key_id, g.namespace, g.read_only, g.revoked
    FROM (SELECT set_config('archivist.namespace', :namespace, true),
                 set_config('synchronous_commit', 'off', true)) s
    LEFT JOIN archivist_key_grant(:hash) g ON true
    """
)


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

    key_id: int | None  # None: bound by configuration (MCP over stdio), not by a key
    namespace: str
    read_only: bool

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


def resolve_key(conn: Connection, key: str, *, scope: str | None = None) -> Grant | None:
    """The grant of a valid key; None for an unknown or revoked one (or not a key at all).

    ``scope``: in the same statement, bind the transaction to that namespace as a search
    does (``GRANT_AND_SCOPE``), whatever the key's namespace: the caller compares them."""
    if not key.startswith(PREFIX) or len(key) > 200:
        return None
    if scope is None:
        row = conn.execute(GRANT, {"hash": key_hash(key)}).first()
    else:
        row = conn.execute(GRANT_AND_SCOPE, {"hash": key_hash(key), "namespace": scope}).first()
    if row is None or row.key_id is None or row.revoked:
        return None
    return Grant(key_id=int(row.key_id), namespace=str(row.namespace), read_only=row.read_only)
