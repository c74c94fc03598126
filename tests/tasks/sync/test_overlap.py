"""A batch's extraction and embedding overlap: the next part of the batch is extracted
while the embedder works on the previous one, and every memory still gets its own vector."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import EmbedOnce, HashingEmbedder
from storage.kernel.records import SessionState
from storage.server.engine import Store
from tasks.extraction import Extraction, HeuristicExtractor
from tasks.sync import PART_SESSIONS, SyncContext, plan_sync, process_batch
from tests.helpers import add_session, chat

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
SESSIONS = 2 * PART_SESSIONS + 5  # three parts, the last one short
WAIT_SECONDS = 60  # only reached when the extraction waits for the embedding (the bug)


class Watched:
    """The heuristic extractor, counting the sessions it has started on."""

    def __init__(self) -> None:
        self._inner = HeuristicExtractor(HashingEmbedder(16))
        self.started = 0
        self.next_part = threading.Event()

    @property
    def name(self) -> str:
        return self._inner.name

    def extract(self, state: SessionState) -> Extraction:
        self.started += 1
        if self.started > PART_SESSIONS:
            self.next_part.set()
        return self._inner.extract(state)

    def extract_many(self, states: Sequence[SessionState]) -> list[Extraction]:
        self.started += len(states)
        if self.started > PART_SESSIONS:
            self.next_part.set()
        return self._inner.extract_many(states)


class Waiting:
    """An embedder whose first call returns only once the next part's extraction has
    begun (or after WAIT_SECONDS): a batch that extracts and embeds in turn never
    overlaps them."""

    name = "waiting"
    dim = 384

    def __init__(self, extractor: Watched) -> None:
        self._extractor = extractor
        self._hashing = HashingEmbedder(self.dim)
        self.calls: list[int] = []
        self.extracted_before: int | None = None  # sessions extracted at the first call
        self.overlapped: bool | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.overlapped is None:
            self.extracted_before = self._extractor.started
            self.overlapped = self._extractor.next_part.wait(WAIT_SECONDS)
        self.calls.append(len(texts))
        return self._hashing.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._hashing.embed_query(text)


def seed(store: Store) -> None:
    for i in range(SESSIONS):
        add_session(
            store,
            f"s{i:02d}",
            "alice",
            chat(
                MORNING,
                f"Plan number {i}: I need the quarterly report for region {i} by Friday.",
                f"Sure, the report for region {i} will be ready on Friday morning.",
                f"Thanks. Also book room {100 + i} for the review of region {i}.",
            ),
        )


def test_the_next_part_is_extracted_while_the_embedder_works(store: Store) -> None:
    seed(store)
    extractor = Watched()
    embedder = Waiting(extractor)
    ctx = SyncContext(extractor, EmbedOnce(embedder), AS_OF, UTC, run_id=None)
    with Session(store.engine) as session:
        plan = plan_sync(session, AS_OF, 26, 2, None)
    assert len(plan.to_process) == SESSIONS
    with Session(store.engine) as session, session.begin():
        written = process_batch(session, ctx, plan.to_process)

    assert embedder.extracted_before == PART_SESSIONS and embedder.overlapped is True
    assert len(embedder.calls) == 3 and written.sessions == SESSIONS
    # every memory carries its own text's vector, whichever part embedded it
    with Session(store.engine) as session:
        rows = session.execute(text("SELECT content, embedding FROM memories")).all()
    assert len(rows) == written.memories_added > 3 * SESSIONS
    expected = HashingEmbedder(384).embed([content for content, _ in rows])
    stored = np.array([vector.to_numpy() for _, vector in rows])
    np.testing.assert_allclose(stored, expected, atol=1e-6)


def test_embed_once_from_several_threads_gives_each_text_its_vector() -> None:
    once = EmbedOnce(HashingEmbedder(16), budget_bytes=50 * (16 * 4 + 200))  # evicts
    texts = [f"text {i % 80}" for i in range(400)]
    reference = HashingEmbedder(16).embed(texts)
    results: dict[int, np.ndarray] = {}

    def work(offset: int) -> None:
        order = texts[offset:] + texts[:offset]
        results[offset] = np.concatenate([once.embed(order[i : i + 7]) for i in range(0, 400, 7)])

    threads = [threading.Thread(target=work, args=(offset,)) for offset in (0, 13, 101, 250)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    for offset, rows in results.items():
        np.testing.assert_array_equal(rows, np.roll(reference, -offset, axis=0))
    assert once.computed + once.reused == 4 * 400
