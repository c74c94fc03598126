"""Which candidates newer ones restate: the same thing said again later, in another session.

"Which coworking space do I use now?": the memory of the space joined last spring and the
one of the space moved to in the autumn are both relevant; the newer one is the answer.
For a question about now, ranking places an older memory right after each newer candidate
that restates it (``_ranking.after_newer``). Two memories restate each other when their
embeddings are close (cosine at least ``RESTATES_COSINE``) and they come from different
sessions (within one conversation, later turns elaborate rather than replace).
Task cards and document chunks neither restate nor are restated; a session summary
(episode) does: the session that booked the dentist restates the one that asked for it.

Measured on bench/eval.py's sets (local embedder, message R@10 of knowledge-update
questions, relevance alone against the default): 0.618 to 0.630 on the own set, 0.567 to
0.603 on its long-horizon part. With session summaries taking part and a present-tense
"when is ...?" read as a question about now (``_timeframe.asks_about_now``), on today's
store: knowledge updates 0.647 to 0.659, overall 0.785 to 0.786, multi-hop 0.690 to 0.687.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection

from storage.kernel.settings import RetrievalSettings
from storage.retrieval._timeframe import QueryTime
from storage.retrieval.candidates import EMBEDDINGS
from storage.retrieval.candidates import rows as fetch
from storage.server.binary_arrays import Int8Array

# Cosine between two memories' embeddings from which they say the same thing (all-MiniLM:
# paraphrases and updates of one fact are mostly above 0.5, unrelated turns below).
RESTATES_COSINE = 0.5
# Kinds that take no part: a task card tracks its own state, chunks are no memory.
_APART = frozenset({"task_card", "doc"})

# ``restated[i, j]``: candidate j (a position in the rows) is newer and restates candidate i.
Restated = np.ndarray


def memory_ids(rows: Sequence[Any]) -> list[int]:
    """The ids of the candidates that can restate or be restated."""
    return [r.id for r in rows if r.kind not in _APART]


def candidate_vectors(
    conn: Connection, namespace: str, ids: Sequence[int], *, prepare: bool
) -> dict[int, np.ndarray]:
    """The embeddings of the namespace's memories ``ids``, in pgvector's binary form."""
    asked = {"namespace": namespace, "ids": Int8Array(ids)}
    found = fetch(conn, EMBEDDINGS, asked, prepare=prepare)
    # vector_send: dimensions (int16), unused (int16), then big-endian float4s.
    return {r.id: np.frombuffer(r.vec, dtype=">f4", offset=4) for r in found}


def restatements(rows: Sequence[Any], vectors: dict[int, np.ndarray]) -> Restated:
    """Which candidates newer ones of another session restate (``Restated``)."""
    n = len(rows)
    taking = [i for i, r in enumerate(rows) if r.kind not in _APART and r.id in vectors]
    restated = np.zeros((n, n), dtype=bool)
    if len(taking) < 2:
        return restated
    matrix = np.stack([vectors[rows[i].id] for i in taking]).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    times = np.array([rows[i].occurred_at.timestamp() for i in taking])
    # Sessions as numbers; memories of no session count as one session, as in the table.
    codes: dict[str | None, int] = {}
    sessions = np.array([codes.setdefault(rows[i].session_id, len(codes)) for i in taking])
    # einsum's own loop, not BLAS: beside the embedding model's threads, BLAS's threads
    # took 30 ms for what this does in 1.4 (100 candidates, 2 cores).
    close = np.einsum("ik,jk->ij", matrix, matrix) >= RESTATES_COSINE
    close &= times[None, :] > times[:, None]
    close &= sessions[None, :] != sessions[:, None]
    restated[np.ix_(taking, taking)] = close
    return restated


def restated_for(
    conn: Connection,
    settings: RetrievalSettings,
    namespace: str,
    found: Sequence[Any],
    when: QueryTime,
    weights: Mapping[str, float],
) -> Restated | None:
    """Which candidates newer ones restate, for a question about now that weighs
    ``supersede`` (one more statement: the candidates' embeddings); else None."""
    ids = memory_ids(found)
    if not (when.about_now and weights.get("supersede") and ids):
        return None
    vectors = candidate_vectors(conn, namespace, ids, prepare=settings.prepared_statements)
    return restatements(found, vectors)
