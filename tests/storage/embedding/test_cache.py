"""The embedding cache on a real PostgreSQL: storage functions and the caching embedder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.embedding import (
    CachedEmbedder,
    Embedder,
    EmbedOnce,
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    make_embedder,
)
from storage.embedding import cache as embedding_cache
from storage.kernel.settings import EmbeddingSettings
from storage.server.engine import Store


class CountingEmbedder:
    """The hashing embedder under any name, recording every text it is asked to embed."""

    def __init__(self, name: str = "counting", dim: int = 16) -> None:
        self._inner = HashingEmbedder(dim=dim)
        self._name = name
        self.embedded: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return self._inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def cached_rows(store: Store) -> list[tuple[str, int]]:
    with store.engine.connect() as conn:
        sql = "SELECT model, count(*) FROM embedding_cache GROUP BY model ORDER BY model"
        return [(m, n) for m, n in conn.execute(text(sql))]


def test_second_call_embeds_nothing(store: Store) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, store.engine)
    texts = ["book the flight", "window seat", "TAP on Friday"]

    first = cached.embed(texts)
    second = cached.embed(texts[::-1])

    assert inner.embedded == texts  # the second call reached the model with nothing
    assert (cached.hits, cached.misses) == (3, 3)
    np.testing.assert_array_equal(first, inner._inner.embed(texts))
    np.testing.assert_array_equal(second, first[::-1])
    assert second.dtype == np.float32 and cached.name == "counting" and cached.dim == 16
    assert cached_rows(store) == [("counting", 3)]


def test_duplicates_in_one_call_are_embedded_once(store: Store) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, store.engine)

    out = cached.embed(["a", "b", "a", "a", "b", "c"])

    assert sorted(inner.embedded) == ["a", "b", "c"]
    np.testing.assert_array_equal(out, inner._inner.embed(["a", "b", "a", "a", "b", "c"]))
    assert cached.misses == 3 and cached.hits == 0


def test_partial_hits_keep_the_input_order(store: Store) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, store.engine)
    cached.embed(["b", "d"])

    out = cached.embed(["a", "b", "c", "d"])

    assert inner.embedded == ["b", "d", "a", "c"]
    np.testing.assert_array_equal(out, inner._inner.embed(["a", "b", "c", "d"]))
    assert cached.embed([]).shape == (0, 16)


def test_cache_is_keyed_by_model(store: Store) -> None:
    CachedEmbedder(CountingEmbedder("model-a"), store.engine).embed(["same text"])
    other = CountingEmbedder("model-b")

    CachedEmbedder(other, store.engine).embed(["same text"])

    assert other.embedded == ["same text"]
    assert cached_rows(store) == [("model-a", 1), ("model-b", 1)]


def test_store_is_idempotent_and_lookup_round_trips(store: Store) -> None:
    vectors = HashingEmbedder(dim=32).embed(["x", "y"])
    items = [
        (embedding_cache.text_hash("x"), vectors[0]),
        (embedding_cache.text_hash("y"), vectors[1]),
    ]

    with Session(store.engine) as s, s.begin():
        assert embedding_cache.store(s, "m", items) == 2
    with Session(store.engine) as s, s.begin():
        assert embedding_cache.store(s, "m", items) == 0
        found = embedding_cache.lookup(s, "m", [h for h, _ in items] + ["absent"])

    assert set(found) == {h for h, _ in items}
    np.testing.assert_array_equal(found[items[1][0]], vectors[1])
    assert cached_rows(store) == [("m", 2)]


def test_store_does_not_commit_and_purge_removes_one_model(store: Store) -> None:
    item = [(embedding_cache.text_hash("x"), np.ones(4, dtype=np.float32) / 2)]
    with Session(store.engine) as s:
        embedding_cache.store(s, "m", item)
        s.rollback()
    assert cached_rows(store) == []

    with Session(store.engine) as s, s.begin():
        embedding_cache.store(s, "m", item)
        embedding_cache.store(s, "other", item)
    with Session(store.engine) as s, s.begin():
        assert embedding_cache.purge_model(s, "m") == 1
    assert cached_rows(store) == [("other", 1)]


def test_text_hash_is_sha256_of_utf8() -> None:
    assert embedding_cache.text_hash("café") == (
        "850f7dc43910ff890f8879c0ed26fe697c93a067ad93a7d50f466a7028a9bf4e"
    )


def test_make_embedder_caches_remote_models_by_default(store: Store) -> None:
    local = EmbeddingSettings(dim=16, provider="hashing")
    model = EmbeddingSettings()  # the local model: not cached either
    remote = EmbeddingSettings(dim=16, provider="openai", base_url="http://x/v1", model="m")

    def built(settings: EmbeddingSettings, engine: Engine | None = None) -> Embedder:
        embedder = make_embedder(settings, engine)
        assert isinstance(embedder, EmbedOnce)  # each text once per run, whatever the model
        return embedder.inner

    assert isinstance(built(local), HashingEmbedder)
    assert isinstance(built(local, store.engine), HashingEmbedder)  # auto: not local
    assert isinstance(built(model, store.engine), LocalEmbedder)
    assert isinstance(built(remote, store.engine), CachedEmbedder)  # auto: remote
    assert isinstance(built(remote), OpenAIEmbedder)  # no engine, no cache
    forced = local.model_copy(update={"cache": "on"})
    assert isinstance(built(forced, store.engine), CachedEmbedder)
    off = remote.model_copy(update={"cache": "off"})
    assert isinstance(built(off, store.engine), OpenAIEmbedder)


def test_openai_settings_need_base_url_and_model() -> None:
    with pytest.raises(ValidationError, match="ARCHIVIST_EMBEDDING__BASE_URL") as info:
        EmbeddingSettings(provider="openai", model="m", api_key="sk-secret")
    assert "ARCHIVIST_EMBEDDING__MODEL" not in str(info.value)
    assert "sk-secret" not in str(info.value)
    with pytest.raises(ValidationError, match="ARCHIVIST_EMBEDDING__MODEL"):
        EmbeddingSettings(provider="openai", base_url="http://localhost:11434/v1")
