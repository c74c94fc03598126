"""Each distinct text embedded once per run: repeats in a call, across calls, across the
sync's batches; bounded memory in a long-lived process."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import EmbedOnce, HashingEmbedder, make_embedder
from storage.kernel.settings import EmbeddingSettings
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync
from tests.storage.embedding.test_cache import CountingEmbedder


def test_a_text_reaches_the_model_once_in_a_call_and_across_calls() -> None:
    counting = CountingEmbedder(dim=16)
    once = EmbedOnce(counting)

    first = once.embed(["thanks", "book the flight", "thanks", "thanks"])
    second = once.embed(["book the flight", "window seat", "thanks", "window seat"])

    assert counting.embedded == ["thanks", "book the flight", "window seat"]
    reference = HashingEmbedder(16)
    asked = (["thanks", "book the flight", "thanks", "thanks"], ["book the flight", "window seat"])
    np.testing.assert_array_equal(first, reference.embed(asked[0]))
    np.testing.assert_array_equal(second, reference.embed([*asked[1], "thanks", "window seat"]))
    assert first.dtype == np.float32 and (once.computed, once.reused) == (3, 5)
    assert once.embed([]).shape == (0, 16)
    assert (once.name, once.dim) == ("counting", 16)


def test_queries_pass_through_to_the_model() -> None:
    counting = CountingEmbedder(dim=16)
    once = EmbedOnce(counting)

    once.embed_query("where is the cabin")
    once.embed_query("where is the cabin")

    assert counting.embedded == ["where is the cabin"] * 2  # its own path, not remembered
    assert once.min_cosine == 0.0 and EmbedOnce(HashingEmbedder(16)).min_cosine > 0


def test_memory_stays_bounded_least_recently_used_first() -> None:
    counting = CountingEmbedder(dim=16)
    once = EmbedOnce(counting, budget_bytes=2 * (16 * 4 + 200))  # room for two vectors

    once.embed(["a", "b"])
    once.embed(["a", "c"])  # "a" used again, so "b" is the oldest and goes
    once.embed(["a", "c", "b"])

    assert counting.embedded == ["a", "b", "c", "b"]
    np.testing.assert_array_equal(once.embed(["b"]), HashingEmbedder(16).embed(["b"]))


AS_OF = datetime(2026, 11, 20, 23, tzinfo=UTC)
REPEATED = (
    "Thanks, that settles it for today.",
    "Can you remind me what we decided about the garden shed?",
)


def test_a_sync_run_sends_each_distinct_text_to_the_model_once(store: Store) -> None:
    """The embedder the factory builds, over a counting endpoint (the seam: an httpx
    transport): sessions in separate batches repeat the same turns."""
    sent: list[str] = []

    def endpoint(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        sent.extend(texts)
        rows = HashingEmbedder(384).embed(texts)
        data = [{"index": i, "embedding": row.tolist()} for i, row in enumerate(rows)]
        return httpx.Response(200, json={"data": data})

    settings = EmbeddingSettings(
        provider="openai", base_url="http://embed.test/v1", model="m", dim=384, cache="off"
    )
    client = httpx.Client(transport=httpx.MockTransport(endpoint))
    embedder = make_embedder(settings, store.engine, client=client)
    start = AS_OF - timedelta(hours=6)
    for i in range(6):
        add_session(
            store,
            f"s{i}",
            "alice" if i % 2 else "bob",
            chat(start + timedelta(minutes=10 * i), f"Session {i}: the roof leaks.", *REPEATED),
        )

    result = run_sync(store, AS_OF, embedder=embedder, batch_size=1)

    assert result.written.sessions == 6
    assert [t for t, n in Counter(sent).items() if n > 1] == []
    with Session(store.engine) as session:
        rows = session.execute(text("SELECT content, embedding FROM memories")).all()
    assert sorted(sent) == sorted({r.content for r in rows})  # every memory's text, once
    thanks = f"aria: {REPEATED[0]}"
    assert sum(r.content == thanks for r in rows) == 6  # still one memory per session
    for row in rows:  # and each the text's own vector
        expected = HashingEmbedder(384).embed([row.content])[0]
        np.testing.assert_allclose(row.embedding.to_numpy(), expected, atol=1e-6)
