"""Keys as presented: for a namespace, not checked yet (``KeyFor``), and their grants."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from serving._errors import Unauthorized
from storage.keys import Grant, resolve_key


@dataclass(frozen=True)
class KeyFor:
    """A key presented for a namespace, not checked yet (the API's search checks it)."""

    key: str
    namespace: str


def presented(key: str | None) -> str:
    """The key, or ``Unauthorized`` when none was sent (no need to ask the store)."""
    if not key:
        raise Unauthorized("no key: send Authorization: Bearer <key> (archivist keys create)")
    return key


def resolved(conn: Connection, key: str | None) -> Grant:
    """The grant of a presented key, with the transaction scoped by it; ``Unauthorized``
    without a valid one."""
    grant = resolve_key(conn, presented(key))
    if grant is None:
        raise Unauthorized("unknown or revoked key")
    return grant
