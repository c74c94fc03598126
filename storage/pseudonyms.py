"""Pseudonyms: what reports, logs and Prefect say instead of a namespace or a session id.

A namespace's name and its sessions' ids are chosen by users. Whatever outlives a
``forget`` (run reports in ``runs``, Prefect's artifacts, logs, events and task-run
names) names them by a pseudonym instead:

- a namespace: ``ns:`` and 12 hex digits of HMAC-SHA256(key, "namespace:" + name);
- a session: ``session:`` and 12 hex digits of HMAC-SHA256(key, "session:" + id);

where ``key`` is the namespace's own random key in ``pseudonym_keys``, made the first time
something names the namespace. ``forget`` deletes the key (the table has a ``namespace``
column, so the erasure's check covers it): from then on nothing, not even someone holding
the whole store and guessing the name, can tie a pseudonym in an old report back to the
namespace or its sessions. A ``:`` is not allowed in a namespace name, so a pseudonym is
never mistaken for one (a run given it as its namespace is refused).

The CLI, which holds the store, shows a namespace's name beside its pseudonym
(``reveal``) while the namespace exists.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import DateTime, LargeBinary, String, func, select, text
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base

DIGITS = 12
NAMESPACE_PREFIX, SESSION_PREFIX = "ns:", "session:"
_PSEUDONYM = re.compile(r"\bns:[0-9a-f]{12}\b")


class PseudonymKey(Base):
    __tablename__ = "pseudonym_keys"

    namespace: Mapped[str] = mapped_column(String(100), primary_key=True)
    key: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


_ADD_KEYS = text(
    "INSERT INTO pseudonym_keys (namespace, key) "
    "SELECT unnest(CAST(:namespaces AS text[])), unnest(CAST(:keys AS bytea[])) "
    "ON CONFLICT (namespace) DO NOTHING"
)


def _digest(key: bytes, kind: str, value: str) -> str:
    mac = hmac.new(key, f"{kind}:{value}".encode(), hashlib.sha256)
    return mac.hexdigest()[:DIGITS]


def keys(session: Session, namespaces: Iterable[str]) -> dict[str, bytes]:
    """The key of each namespace, made for those that have none (in the caller's
    transaction; a concurrent maker's key wins, and both read it)."""
    wanted = sorted(set(namespaces))
    if not wanted:
        return {}
    fresh = [secrets.token_bytes(32) for _ in wanted]
    session.execute(_ADD_KEYS, {"namespaces": wanted, "keys": fresh})
    rows = session.execute(select(PseudonymKey).where(PseudonymKey.namespace.in_(wanted)))
    return {row.namespace: row.key for row in rows.scalars()}


@dataclass(frozen=True)
class Pseudonyms:
    """The pseudonyms of some namespaces and sessions (no keys: safe to pass around)."""

    namespaces: Mapping[str, str] = field(default_factory=dict)
    sessions: Mapping[str, str] = field(default_factory=dict)

    def namespace(self, name: str | None) -> str | None:
        return None if name is None else self.namespaces[name]

    def session(self, session_id: str) -> str:
        """A session's pseudonym; a session not recorded has none of its own."""
        return self.sessions.get(session_id, UNKNOWN_SESSION)

    def path(self, relative: str) -> str:
        """A memory-file path (``<namespace>/...``) with its namespace's pseudonym."""
        head, sep, rest = relative.partition("/")
        return self.namespaces.get(head, head) + sep + rest


UNKNOWN_SESSION = SESSION_PREFIX + "unknown"
_SESSION_NAMESPACES = text("SELECT id, namespace FROM chat_sessions WHERE id = ANY(:ids)")


def pseudonyms(
    session: Session, namespaces: Iterable[str | None] = (), sessions: Iterable[str] = ()
) -> Pseudonyms:
    """Pseudonyms of ``namespaces`` and of the recorded ``sessions`` (by id)."""
    ids = sorted(set(sessions))
    pairs = [(str(n), str(s)) for s, n in session.execute(_SESSION_NAMESPACES, {"ids": ids})]
    return _of(session, [n for n in namespaces if n is not None], pairs)


def _of(session: Session, namespaces: list[str], pairs: list[tuple[str, str]]) -> Pseudonyms:
    found = keys(session, [*namespaces, *(n for n, _ in pairs)])
    return Pseudonyms(
        namespaces={n: NAMESPACE_PREFIX + _digest(k, "namespace", n) for n, k in found.items()},
        sessions={s: SESSION_PREFIX + _digest(found[n], "session", s) for n, s in pairs},
    )


def namespace_pseudonym(session: Session, namespace: str) -> str:
    return _of(session, [namespace], []).namespaces[namespace]


def session_pseudonym(session: Session, namespace: str, session_id: str) -> str:
    """A session's pseudonym, its namespace given (its row may be gone already)."""
    return _of(session, [], [(namespace, session_id)]).sessions[session_id]


def reveal(session: Session, text_: str) -> str:
    """``text_`` with each namespace pseudonym followed by its name, where it still has one
    (read only: for what the CLI shows the operator, never for what it stores)."""
    found = set(_PSEUDONYM.findall(text_))
    if not found:
        return text_
    names = {}
    for row in session.execute(select(PseudonymKey)).scalars():
        pseudonym = NAMESPACE_PREFIX + _digest(row.key, "namespace", row.namespace)
        if pseudonym in found:
            names[pseudonym] = row.namespace

    def named(match: re.Match[str]) -> str:
        pseudonym = match.group()
        return f"{pseudonym} ({names[pseudonym]})" if pseudonym in names else pseudonym

    return _PSEUDONYM.sub(named, text_)
