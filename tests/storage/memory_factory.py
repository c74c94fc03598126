"""Put memories straight into the store, with the fields a ranking test controls."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypedDict, Unpack

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.records import SessionRecord
from storage.memories import NewMemory, insert_memories
from storage.server.engine import Store
from storage.sessions import record_session


class MemoryFields(TypedDict, total=False):
    """A test memory's fields beyond its text and time (defaults: a fact, importance 0.5;
    ``spacing``: the i-th memory occurs i spacings after the first, created with it)."""

    kind: str
    importance: float
    vehemence: float
    access_count: int
    session_id: str
    spacing: timedelta


def put(
    store: Store,
    namespace: str,
    contents: Sequence[str],
    occurred_at: datetime,
    **fields: Unpack[MemoryFields],
) -> list[int]:
    """Insert memories (of no session unless given) and return their ids."""
    kind, importance = fields.get("kind", "fact"), fields.get("importance", 0.5)
    vehemence, access_count = fields.get("vehemence", 0.0), fields.get("access_count", 0)
    spacing = fields.get("spacing", timedelta(0))
    embedder = HashingEmbedder(store.settings.embedding.dim)
    vectors = embedder.embed(list(contents))
    rows = [
        NewMemory(
            namespace=namespace,
            kind=kind,
            content=content,
            content_key=hashlib.sha256(f"{namespace}{i}{content}".encode()).hexdigest(),
            embedding=vectors[i],
            embedding_model=embedder.name,
            importance=importance,
            vehemence=vehemence,
            session_id=fields.get("session_id"),
            message_ids=(f"m{i}",),
            run_id=None,
            extractor="test",
            occurred_at=occurred_at + i * spacing,
            created_at=occurred_at,
        )
        for i, content in enumerate(contents)
    ]
    with Session(store.engine) as session, session.begin():
        if "session_id" in fields:  # its chat session, for the memories to cite
            record_session(
                session, SessionRecord(id=fields["session_id"], namespace=namespace, agent="test")
            )
        ids = insert_memories(session, rows)
        if access_count:
            session.execute(
                text("UPDATE memories SET access_count = :n WHERE id = ANY(:ids)"),
                {"n": access_count, "ids": ids},
            )
    return ids
