"""Keys as presented: for a namespace, not checked yet (``KeyFor``), and their grants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, TextClause

from serving._errors import Unauthorized
from storage.keys import Grant, resolve_key
from storage.retrieval.candidates import rows


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


def resolved(conn: Connection, key: str | None, *, prepare: bool = True) -> Grant:
    """The grant of a presented key, with the transaction scoped by it; ``Unauthorized``
    without a valid one. The scoping statement runs as a search's statements do: prepared
    once per connection (unless ``prepare`` is False), on the driver's cursor (through
    SQLAlchemy's execution it cost the server about 0.2 ms more per request)."""

    def first(conn: Connection, statement: TextClause, params: Mapping[str, Any]) -> Any:
        found = rows(conn, statement, params, prepare=prepare)
        return found[0] if found else None

    grant = resolve_key(conn, presented(key), first=first)
    if grant is None:
        raise Unauthorized("unknown or revoked key")
    return grant
