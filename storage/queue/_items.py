"""One namespace's items, by id or by the document they carry: what the HTTP API shows of a
queued write, and what erasing a document removes from the queue with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

ITEM = text(
    """
    SELECT id AS queue_item, op, status, attempts, max_attempts, result, last_error,
           created_at, updated_at, completed_at
    FROM memory_write_queue WHERE id = :id AND namespace = :namespace
    """
)
# Every ADD_DOCUMENT of these names, whatever its status: a document's erasure takes the
# copies of its text the queue still holds (a completed item keeps its payload until it is
# purged), and a pending one with them, which would bring the document back.
FORGET_DOCUMENTS = text(
    """
    DELETE FROM memory_write_queue
    WHERE namespace = :namespace AND op = 'ADD_DOCUMENT'
      AND payload->>'name' = ANY(CAST(:names AS text[]))
    """
)


def item_status(session: Session, namespace: str, item_id: int) -> dict[str, Any] | None:
    """An item of ``namespace`` without its payload (status, attempts, result, last error),
    or None: no such item in that namespace."""
    row = session.execute(ITEM, {"id": item_id, "namespace": namespace}).mappings().first()
    return None if row is None else dict(row)


def forget_documents(session: Session, namespace: str, names: Sequence[str]) -> int:
    """Delete the namespace's ``ADD_DOCUMENT`` items of these document names; how many."""
    if not names:
        return 0
    result = session.execute(FORGET_DOCUMENTS, {"namespace": namespace, "names": list(names)})
    return int(getattr(result, "rowcount", 0))
