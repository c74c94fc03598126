"""``audit_log``: who did what to whose memory, in counts, ids and hashes, never content.

Every privacy action (forget, purge, pin, unpin, restore) writes one row in the same
transaction as the change it describes. ``details`` is checked before it is written: a
value must be a number, a boolean, a list of ids, or a short token without spaces (an id
or a hash), so a message or a memory's text cannot slip into the log by mistake.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, String, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base
from storage.kernel.errors import InputError

_TOKEN = re.compile(r"^[A-Za-z0-9._:@=/+-]{0,200}$")


class AuditEntry(Base):
    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(50))
    namespace: Mapped[str | None] = mapped_column(String(100))
    target: Mapped[str | None] = mapped_column(String(300))
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")


def _content_free(value: object) -> bool:
    if value is None or isinstance(value, bool | int | float):
        return True
    if isinstance(value, str):
        return bool(_TOKEN.match(value))
    if isinstance(value, list | tuple):
        return all(isinstance(v, int) or (isinstance(v, str) and _TOKEN.match(v)) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _content_free(v) for k, v in value.items())
    return False


def record(
    session: Session,
    action: str,
    *,
    actor: str,
    namespace: str | None = None,
    target: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Add one audit row; details that could hold content are refused."""
    payload = dict(details or {})
    bad = sorted(k for k, v in payload.items() if not _content_free(v))
    if bad:
        raise InputError(f"audit details {bad} for {action!r} may hold content; log counts or ids")
    session.add(
        AuditEntry(actor=actor, action=action, namespace=namespace, target=target, details=payload)
    )
    session.flush()


def entries(session: Session, action: str | None = None) -> list[AuditEntry]:
    """Audit rows, oldest first (optionally of one action)."""
    stmt = select(AuditEntry).order_by(AuditEntry.id)
    if action is not None:
        stmt = stmt.where(AuditEntry.action == action)
    return list(session.execute(stmt).scalars())
