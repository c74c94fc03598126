"""A memory's vector stays in its row (migration 0028): none goes to the TOAST table, where
a search read each candidate's through another index and page. The migration brings the
vectors an older version moved out back into their rows, and search finds the same."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import Connection, text

from storage.embedding import HashingEmbedder
from storage.retrieval import Retriever
from storage.server.engine import Store
from tests.storage.memory_factory import put
from tests.storage.schema_steps import migrate

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
OUT_OF_ROW = text(
    "SELECT count(pg_column_toast_chunk_id(embedding)), count(pg_column_toast_chunk_id(content)) "
    "FROM memories"
)
# Over a page, and not compressible into one: its text still goes out.
LONG = " ".join(hashlib.sha256(bytes([i])).hexdigest() for i in range(200))
# Memories of about 2.3 KB with their vectors (the default TOAST target is 2 KB).
TEXTS = [
    f"{words} {' '.join(hashlib.sha256(f'{words}{i}'.encode()).hexdigest() for i in range(10))}"
    for words in ("the dentist is on friday at 4", "pack the tent", "call bob")
]


def _toasted(conn: Connection) -> tuple[int, int]:
    """How many memories keep their vector, and their text, in the TOAST table."""
    vectors, texts = conn.execute(OUT_OF_ROW).one()
    return int(vectors), int(texts)


def _search(store: Store) -> list[tuple[int | None, float]]:
    hits = Retriever(store.engine, HashingEmbedder(store.settings.embedding.dim)).search(
        "alice", "the dentist on friday", as_of=AS_OF, record_access=False
    )
    return [(h.memory_id, h.score) for h in hits]


def test_a_new_memory_keeps_its_vector_in_its_row(store: Store) -> None:
    put(store, "alice", TEXTS, AS_OF)
    with store.engine.connect() as conn:
        assert _toasted(conn) == (0, 0)


def test_a_row_over_a_page_still_moves_its_text_out(store: Store) -> None:
    (memory,) = put(store, "alice", [LONG], AS_OF)
    with store.engine.connect() as conn:
        assert _toasted(conn) == (0, 1)
        stored = conn.execute(
            text("SELECT content FROM memories WHERE id = :id"), {"id": memory}
        ).scalar_one()
    assert stored == LONG


def test_the_migration_moves_stored_vectors_into_their_rows(store: Store) -> None:
    put(store, "alice", TEXTS, AS_OF)
    before = _search(store)  # searched at head: search needs the later migrations' tables
    migrate(store, "0027")  # the revision before 0028 (its downgrade rewrites the rows)
    with store.engine.connect() as conn:
        assert _toasted(conn) == (3, 0)  # before: every vector out of its row

    migrate(store, "head")
    with store.engine.connect() as conn:
        assert _toasted(conn) == (0, 0)
        options = conn.execute(
            text("SELECT reloptions FROM pg_class WHERE relname = 'document_chunks'")
        ).scalar_one()
    assert "toast_tuple_target=8160" in options
    assert _search(store) == before and before
