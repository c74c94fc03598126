"""What each queued op does: messages, memory writes, forgets and documents, for a batch of
items.

Messages are recorded first, so a memory of the same batch can name their session; the
batch's memory writes share one embed call and one binary COPY. Documents are stored one
by one with ``docs ingest``'s steps (``tasks.documents.add_uploaded``), in order of their
items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.exc import DataError, DBAPIError
from sqlalchemy.orm import Session

from storage import queue
from storage.embedding import Embedder
from storage.kernel.errors import ArchivistError, InputError, PermanentError
from storage.kernel.settings import DocumentSettings
from storage.memories import NewMemory, insert_memories
from storage.queue import (
    AddDocument,
    ForgetMemory,
    MemoryText,
    QueueItem,
    RecordMessage,
    parse_stored,
)
from storage.sessions import load_sessions, record_message, record_session
from tasks.documents import add_uploaded

# What an item's execution can raise that is the item's failure rather than a bug here:
# our own errors (bad references, an embedder that gave up) and the database's refusals.
# Their messages name the item and the field, never a value it holds: they reach the run's
# report and log, which outlive a forget of the namespace.
ITEM_ERRORS = (ArchivistError, DBAPIError)


# Retrying cannot help: our refusals for good, and values the database rejects (DataError,
# SQLSTATE class 22). The rest (embedder down, a deadlock, a session not recorded yet) may
# pass on a later attempt.
def is_permanent(exc: Exception) -> bool:
    """Whether the failed item can never succeed as it stands (it goes dead at once)."""
    return isinstance(exc, PermanentError | DataError)


def execute(
    session: Session,
    items: Sequence[QueueItem],
    embedder: Embedder,
    now: datetime,
    documents: DocumentSettings | None = None,
) -> list[dict[str, Any]]:
    """Do the items' work (messages, then memory writes, then forgets, then documents, cut
    as ``documents`` says); results in item order."""
    parsed = [(item, parse_stored(item.op, item.payload)) for item in items]
    results: dict[int, dict[str, Any]] = {}
    results |= _record(session, [(i, p) for i, p in parsed if isinstance(p, RecordMessage)])
    texts = [(i, p) for i, p in parsed if isinstance(p, MemoryText)]
    results |= _write_memories(session, texts, embedder, now)
    results |= _forget(session, [(i, p) for i, p in parsed if isinstance(p, ForgetMemory)])
    docs = documents or DocumentSettings()
    for item, payload in parsed:
        if isinstance(payload, AddDocument):
            where = (item.id, item.namespace)
            results[item.id] = add_uploaded(session, embedder, where, payload, docs, now)
    return [results[item.id] for item in items]


def _record(
    session: Session, items: Sequence[tuple[QueueItem, RecordMessage]]
) -> dict[int, dict[str, Any]]:
    known = load_sessions(session, [p.session.id for _, p in items])
    out = {}
    for item, payload in items:
        existing = known.get(payload.session.id)
        if existing is not None and existing.namespace != item.namespace:
            raise PermanentError(
                f"queue item {item.id}: its session.id belongs to another namespace; "
                "nothing recorded"
            )
        record_session(session, payload.session)
        record_message(session, payload.session.id, payload.message)
        out[item.id] = {"session_id": payload.session.id, "message_id": payload.message.id}
    return out


def _write_memories(
    session: Session,
    items: Sequence[tuple[QueueItem, MemoryText]],
    embedder: Embedder,
    now: datetime,
) -> dict[int, dict[str, Any]]:
    if not items:
        return {}
    _check_sessions(session, items)
    vectors = embedder.embed([payload.content for _, payload in items])
    rows = [
        _new_memory(item, payload, vector, embedder.name, now)
        for (item, payload), vector in zip(items, vectors, strict=True)
    ]
    ids = insert_memories(session, rows)
    return {
        item.id: {"memory_id": mid, "kind": row.kind}
        for (item, _), mid, row in zip(items, ids, rows, strict=True)
    }


def _check_sessions(session: Session, items: Sequence[tuple[QueueItem, MemoryText]]) -> None:
    wanted = sorted({p.session_id for _, p in items if p.session_id is not None})
    known = load_sessions(session, wanted) if wanted else {}
    for item, payload in items:
        if payload.session_id is None:
            continue
        found = known.get(payload.session_id)
        if found is None:  # it may be recorded by an item still queued: retried
            raise InputError(
                f"queue item {item.id}: its session_id is not recorded in the item's "
                "namespace; record it first (RECORD_MESSAGE)"
            )
        if found.namespace != item.namespace:
            raise PermanentError(
                f"queue item {item.id}: its session_id belongs to another namespace than "
                "the item's; nothing written"
            )


def _new_memory(
    item: QueueItem, payload: MemoryText, vector: Any, model: str, now: datetime
) -> NewMemory:
    kind = payload.memory_kind
    # The item id in the key: a retried item cannot add a second copy of its memory.
    raw_key = "\x1f".join((kind, payload.content, f"queue:{item.id}"))
    return NewMemory(
        namespace=item.namespace,
        kind=kind,
        content=payload.content,
        content_key=hashlib.sha256(raw_key.encode("utf-8")).hexdigest(),
        embedding=vector,
        embedding_model=model,
        importance=0.5 if payload.importance is None else payload.importance,
        vehemence=0.0,
        session_id=payload.session_id,
        message_ids=(),
        run_id=None,
        extractor="queue",
        occurred_at=payload.occurred_at or item.created_at,
        created_at=now,
    )


def _forget(
    session: Session, items: Sequence[tuple[QueueItem, ForgetMemory]]
) -> dict[int, dict[str, Any]]:
    out = {}
    for item, payload in items:
        outcome = queue.forget_memory(session, item.namespace, payload.memory_id)
        if outcome == "foreign":
            raise PermanentError(
                f"queue item {item.id}: memory {payload.memory_id} belongs to another namespace "
                "than the item's; not deleted"
            )
        out[item.id] = {"memory_id": payload.memory_id, "deleted": outcome == "deleted"}
    return out
