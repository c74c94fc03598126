"""A namespace's documents over the HTTP API and MCP: add one (through the write queue), list
them, delete one, and follow a queued write.

A document is added as ``docs ingest`` adds a file, by another door: the request passes
the queue's door (``storage.queue.AddDocument``: the input gate's kinds and the documents'
own rules) and is queued as ``ADD_DOCUMENT``; a drainer (``archivist worker`` or
``memory-queue-drain``) chunks, embeds and stores it. Deleting one removes it with its
chunks at once, and the queue items that still carry its text, in one transaction scoped
to the namespace for writing (row-level security), audited with the key's id. The ids it
shows and takes (a document's, a queued write's) are public ones (``serving._ids``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from sqlalchemy.orm import Session

from serving._errors import NotFound
from serving._ids import ShownIds
from serving._views import json_row
from storage import audit, queue
from storage import documents as store
from storage.kernel.settings import Settings
from storage.keys import Grant
from storage.queue import AddDocument


class Scoped(Protocol):
    """What the documents need of their ``MemoryService``: its settings, its public ids, its
    transactions scoped to a grant's namespace (``write``: for writing too), and its
    judgement of a grant."""

    settings: Settings
    ids: ShownIds

    def session(self, grant: Grant, *, write: bool = False) -> AbstractContextManager[Session]: ...

    def authorize(self, grant: Grant, namespace: str, *, write: bool = False) -> None: ...


class Documents:
    """The documents part of one ``MemoryService``."""

    def __init__(self, service: Scoped) -> None:
        self.service = service

    def add(
        self, grant: Grant, upload: AddDocument, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Queue a document (the worker stores it); the same idempotency key again is a no-op."""
        self.service.authorize(grant, grant.namespace, write=True)
        payload = upload.model_dump(exclude_none=True, include=set(AddDocument.model_fields))
        with self.service.session(grant, write=True) as session:
            queued = queue.enqueue(
                session,
                grant.namespace,
                "ADD_DOCUMENT",
                payload,
                idempotency_key=idempotency_key,
                settings=self.service.settings,
            )
            if not queued.duplicate:
                self._audit(session, grant, "add_document", f"queue:{queued.id}")
        return {
            "queue_item": self.service.ids.show("queue", queued.id),
            "duplicate": queued.duplicate,
            "status": "queued",
            "name": upload.name,
        }

    def listed(self, grant: Grant) -> list[dict[str, Any]]:
        """The namespace's documents with their chunk counts, by URI; ``name``: what one
        added over the API or MCP was added as (null for a file ``docs ingest`` read)."""
        with self.service.session(grant) as session:
            rows = store.list_documents(session, grant.namespace)
        shown = self.service.ids
        return [
            json_row(
                {"name": store.upload_name(r["uri"]), **r, "id": shown.show("document", r["id"])}
            )
            for r in rows
        ]

    def delete(self, grant: Grant, document_id: int) -> dict[str, Any]:
        """Delete a document of the namespace now, with its chunks and its queued copies;
        ``document_id`` is its public id."""
        self.service.authorize(grant, grant.namespace, write=True)
        missing = NotFound(f"no document {document_id} in namespace {grant.namespace!r}")
        real = self.service.ids.take("document", document_id)
        if real is None:
            raise missing
        with self.service.session(grant, write=True) as session:
            purged = store.purge_documents(session, grant.namespace, document_id=real)
            if not purged.ids:
                raise missing
            queue.forget_documents(session, grant.namespace, purged.names)
            self._audit(session, grant, "delete_document", f"document:{real}")
        return {"document_id": document_id, "deleted": True, "chunks": purged.chunks}

    def queued(self, grant: Grant, item_id: int) -> dict[str, Any]:
        """A queued write of the namespace: its status, attempts, result and last error (no
        payload), by its public id; ``NotFound`` for any other id."""
        missing = NotFound(f"no queue item {item_id} in namespace {grant.namespace!r}")
        real = self.service.ids.take("queue", item_id)
        if real is None:
            raise missing
        with self.service.session(grant) as session:
            found = queue.item_status(session, grant.namespace, real)
        if found is None:
            raise missing
        return json_row(self.service.ids.item(found))

    def _audit(self, session: Session, grant: Grant, action: str, target: str) -> None:
        audit.record(session, action, actor=grant.actor, namespace=grant.namespace, target=target)
