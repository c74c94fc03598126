"""Re-embedding the store: next vectors filled beside the current ones, then swapped in.

``memories.embedding_next`` and ``document_chunks.embedding_next`` (sized for the new
model) are filled batch by batch, each batch
committed on its own, so a killed run loses at most the batch in flight and the next run
goes on with the rows still NULL. Searches keep using the old vectors until ``swap``
replaces them all in one transaction, and the store's model facts change with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from storage.embedding import PREVIOUS_TURN_SQL, TURN_TEXT_SQL, Embedder
from storage.meta import (
    EMBEDDING_DIM,
    EMBEDDING_MODEL,
    REEMBED_DIM,
    REEMBED_MODEL,
    REEMBED_TURN_CONTEXT,
    TURN_CONTEXT,
    drop_facts,
    read_facts,
    set_fact,
    turn_context_fact,
)
from storage.operations.ann import create_namespace_indexes

_HAS_NEXT = text(
    "SELECT EXISTS (SELECT 1 FROM information_schema.columns "
    "WHERE table_name = 'memories' AND column_name = 'embedding_next')"
)
# The tables with vectors, and the text each row's vector is made from (a document
# chunk's is its heading path and text, as ``tasks.documents.embed_text`` writes it).
TABLES = {
    "memories": "content",
    "document_chunks": "CASE WHEN heading = '' THEN text ELSE heading || E'\\n' || text END",
}
_PENDING = {
    table: text(
        f"SELECT count(*) FROM {table} WHERE embedding_next IS NULL "
        "AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)"
    )
    for table in TABLES
}
_BATCH = {
    table: text(
        f"SELECT id, {source} AS content FROM {table} WHERE embedding_next IS NULL "
        "AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace) "
        "ORDER BY id LIMIT :size"
    )
    for table, source in TABLES.items()
}
# With ``embedding.turn_context``, a turn's text carries its session's title, its date and
# the previous turn, as the sync embeds it (``storage.embedding.turn_text``).
_TURNS_BATCH = text(
    f"SELECT m.id, CASE WHEN m.kind = 'turn' THEN {TURN_TEXT_SQL} ELSE m.content END AS content "
    "FROM memories m LEFT JOIN chat_sessions s ON s.id = m.session_id "
    f"LEFT JOIN LATERAL ({PREVIOUS_TURN_SQL}) p ON m.kind = 'turn' "
    "WHERE m.embedding_next IS NULL "
    "AND (CAST(:namespace AS text) IS NULL OR m.namespace = :namespace) "
    "ORDER BY m.id LIMIT :size"
)
_WRITE = {
    table: text(
        f"UPDATE {table} m SET embedding_next = CAST(v.vector AS vector) "
        "FROM unnest(CAST(:ids AS bigint[]), CAST(:vectors AS text[])) AS v(id, vector) "
        "WHERE m.id = v.id"
    ).bindparams(bindparam("ids"), bindparam("vectors"))
    for table in TABLES
}


def start(session: Session, model: str, dim: int, *, turn_context: bool = False) -> bool:
    """Make room for ``model``'s vectors (of turns in context with ``turn_context``); False
    when a run for them is already under way (one for other texts starts over)."""
    facts = read_facts(session)
    has_next = bool(session.scalar(_HAS_NEXT))
    texts = turn_context_fact(turn_context=turn_context)
    wanted = {REEMBED_MODEL: model, REEMBED_DIM: str(dim), REEMBED_TURN_CONTEXT: texts}
    if has_next and all(facts.get(key) == value for key, value in wanted.items()):
        return False
    for table in TABLES:
        session.execute(text(f"ALTER TABLE {table} DROP COLUMN IF EXISTS embedding_next"))
        session.execute(text(f"ALTER TABLE {table} ADD COLUMN embedding_next vector({int(dim)})"))
    # Chunks keep their vectors in the row (migration 0017), the next ones too.
    session.execute(text("ALTER TABLE document_chunks ALTER embedding_next SET STORAGE MAIN"))
    for key, value in wanted.items():
        set_fact(session, key, value)
    return True


def pending(session: Session, namespace: str | None = None) -> int:
    """Rows (memories and document chunks) still waiting for their next vector."""
    params = {"namespace": namespace}
    return sum(int(session.scalar(statement, params) or 0) for statement in _PENDING.values())


def next_batch(
    session: Session, namespace: str | None, size: int, *, turn_context: bool = False
) -> tuple[str, list[tuple[int, str]]]:
    """The next ``size`` rows to re-embed, memories first: (table, [(id, text)]); with
    ``turn_context`` a turn's text is the one the sync embeds with its context."""
    for table, statement in _BATCH.items():
        if table == "memories" and turn_context:
            statement = _TURNS_BATCH
        rows = session.execute(statement, {"namespace": namespace, "size": size}).all()
        if rows:
            return table, [(int(r.id), str(r.content)) for r in rows]
    return "memories", []


def write_batch(
    session: Session, ids: Sequence[int], vectors: np.ndarray, table: str = "memories"
) -> None:
    """Store the next vectors of ``ids`` (rows of ``table``)."""
    literals = ["[" + ",".join(f"{x:.8g}" for x in row) + "]" for row in vectors.tolist()]
    session.execute(_WRITE[table], {"ids": list(ids), "vectors": literals})


def swap(session: Session, model: str, dim: int, *, turn_context: bool = False) -> bool:
    """Replace every vector by its next one, in this transaction; False if rows still wait.
    The store's facts then name ``model`` and whether its turns are in context.

    Takes the table's exclusive lock, so no writer adds a row without a next vector
    between the check and the swap, and no search sees half of it.
    """
    session.execute(text("LOCK TABLE memories, document_chunks IN ACCESS EXCLUSIVE MODE"))
    if pending(session):
        return False
    for table in TABLES:
        for statement in (
            f"ALTER TABLE {table} DROP COLUMN embedding",
            f"ALTER TABLE {table} RENAME COLUMN embedding_next TO embedding",
            f"ALTER TABLE {table} ALTER COLUMN embedding SET NOT NULL",
        ):
            session.execute(text(statement))
        session.execute(text(f"UPDATE {table} SET embedding_model = :model"), {"model": model})
    create_namespace_indexes(session)  # the old ones went with the old column
    set_fact(session, EMBEDDING_MODEL, model)
    set_fact(session, EMBEDDING_DIM, str(dim))
    set_fact(session, TURN_CONTEXT, turn_context_fact(turn_context=turn_context))
    drop_facts(session, REEMBED_MODEL, REEMBED_DIM, REEMBED_TURN_CONTEXT)
    return True


def refresh_vectors(table: pa.Table, embedder: Embedder) -> pa.Table:
    """Archived rows with vectors of ``embedder``'s model: rows of another model re-embedded.

    Archive files keep the vectors of the model that wrote them; a restore passes its rows
    through here, so the hot table only ever holds the store's model.
    """
    stale = [
        i
        for i, model in enumerate(table.column("embedding_model").to_pylist())
        if model != embedder.name
    ]
    if not stale:
        return table
    vectors = table.column("embedding").to_pylist()
    fresh = embedder.embed([str(table.column("content")[i]) for i in stale])
    for i, vector in zip(stale, fresh.tolist(), strict=True):
        vectors[i] = vector
    field = table.schema.field("embedding")
    table = table.set_column(
        table.schema.get_field_index("embedding"), field, pa.array(vectors, field.type)
    )
    models = pa.array([embedder.name] * table.num_rows, pa.string())
    return table.set_column(
        table.schema.get_field_index("embedding_model"), "embedding_model", models
    )
