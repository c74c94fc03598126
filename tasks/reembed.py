"""Re-embed the store with the configured model, in committed batches that survive a kill.

Hot and compressed memories and long-term entries all live in ``memories``, and document
chunks in ``document_chunks``; each batch of
rows gets its next vector and commits, and once no row waits the next vectors replace the
old ones in one transaction (``storage.operations.reembed``). Archived rows keep their Parquet
vectors: a restore re-embeds a row of another model, and archived search ranks such rows
by their words alone, so no ranking ever compares vectors of two models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.embedding import Embedder
from storage.meta import EMBEDDING_DIM, EMBEDDING_MODEL, read_facts, stored_turn_context
from storage.operations import reembed as store

OnProgress = Callable[[int, int], None]


@dataclass
class ReembedOutcome:
    """What one run did: rows embedded now (of which document chunks), rows still waiting,
    whether the swap happened."""

    model: str
    turn_context: bool = False  # turns embedded with their context
    embedded: int = 0
    chunks: int = 0
    resumed: bool = False
    pending: int = 0
    swapped: bool = False
    already_current: bool = False


def reembed(
    engine: Engine,
    embedder: Embedder,
    *,
    namespace: str | None = None,
    batch: int = 256,
    on_progress: OnProgress | None = None,
    turn_context: bool = False,
) -> ReembedOutcome:
    """Give every memory (of ``namespace``, or all) a vector from ``embedder``.

    ``turn_context`` (the setting ``embedding.turn_context``): turns get the vector of the
    text the sync embeds them from, with their session's title, date and previous turn. A
    store is current when its vectors come from ``embedder`` and its turns were embedded
    as ``turn_context`` says (``storage.meta.TURN_CONTEXT``): toggling the setting and
    running this re-embeds the store.

    The swap to the new vectors happens once no row of any namespace waits; until then
    searches keep using the old model's vectors and other commands refuse the new model.
    """
    out = ReembedOutcome(embedder.name, turn_context)
    with Session(engine) as session, session.begin():
        facts = read_facts(session)
        current = (facts.get(EMBEDDING_MODEL), facts.get(EMBEDDING_DIM))
        same_texts = stored_turn_context(facts) == turn_context
        if current == (embedder.name, str(embedder.dim)) and same_texts:
            if "reembed_model" not in facts:  # else a run is under way: finish it
                out.already_current = True
                return out
        out.resumed = not store.start(
            session, embedder.name, embedder.dim, turn_context=turn_context
        )
        total = store.pending(session, namespace)
    while True:
        while True:
            table, rows = _next(engine, namespace, batch, turn_context=turn_context)
            if not rows:
                break
            vectors = embedder.embed([content for _, content in rows])
            with Session(engine) as session, session.begin():
                store.write_batch(session, [mid for mid, _ in rows], vectors, table)
            out.embedded += len(rows)
            out.chunks += len(rows) if table == "document_chunks" else 0
            if on_progress is not None:
                on_progress(out.embedded, max(total, out.embedded))
        with Session(engine) as session, session.begin():
            out.swapped = store.swap(
                session, embedder.name, embedder.dim, turn_context=turn_context
            )
            out.pending = 0 if out.swapped else store.pending(session)
        if out.swapped or namespace is not None:
            break  # else a writer added rows meanwhile: embed them too
    if out.swapped:
        # The swap rewrote every row; clear the dead versions and refresh statistics.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM (ANALYZE) memories"))
            conn.execute(text("VACUUM (ANALYZE) document_chunks"))
    return out


def _next(
    engine: Engine, namespace: str | None, size: int, *, turn_context: bool
) -> tuple[str, list[tuple[int, str]]]:
    with Session(engine) as session:
        return store.next_batch(session, namespace, size, turn_context=turn_context)
