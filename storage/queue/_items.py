"""Single items: what the HTTP API shows of a queued write, what erasing a document removes
from the queue with it, and the claim clock of an item about to run alone."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.queue._payloads import QueueItem

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

# The claim's clock starts again: the stuck timeout then measures this item's own work,
# not the batch's before it. Only while the claim (worker, attempt) still holds.
RESTART_CLAIM = text(
    """
    UPDATE memory_write_queue SET claimed_at = COALESCE(CAST(:now AS timestamptz), now())
    WHERE id = :id AND status = 'processing' AND claimed_by = :worker AND attempts = :attempts
    RETURNING id
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


def restart_claim(session: Session, item: QueueItem, now: datetime | None) -> bool:
    """Restart a claimed item's clock before it runs alone (a document, which may take
    minutes to embed after the batch's others); False: the claim was taken over."""
    params = {"id": item.id, "worker": item.claimed_by, "attempts": item.attempts, "now": now}
    return session.execute(RESTART_CLAIM, params).first() is not None
