"""An embedder that remembers: vectors already computed come from ``embedding_cache``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.embedding import cache as embedding_cache
from storage.embedding._protocol import Embedder
from storage.kernel.errors import ConfigurationError


class CachedEmbedder:
    """Wraps an embedder; only texts never seen under its name reach it.

    ``hits`` and ``misses`` count distinct texts per call, summed over the embedder's life.
    """

    def __init__(self, inner: Embedder, engine: Engine) -> None:
        self._inner = inner
        self._engine = engine
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    @property
    def min_cosine(self) -> float:
        """The wrapped model's relevance floor (``storage.retrieval`` reads it)."""
        return float(getattr(self._inner, "min_cosine", 0.0))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows in input order: cached ones looked up, the rest embedded once and cached."""
        hashes = [embedding_cache.text_hash(t) for t in texts]
        distinct = dict(zip(hashes, texts, strict=True))
        with Session(self._engine) as session:
            vectors = embedding_cache.lookup(session, self.name, list(distinct))
        self._check_dims(vectors)
        missing = [h for h in distinct if h not in vectors]
        if missing:
            vectors.update(self._embed_and_store(missing, distinct))
        self.hits += len(distinct) - len(missing)
        self.misses += len(missing)
        if not hashes:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([vectors[h] for h in hashes]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        """The text's cached vector, as `embed` gives it: the inner embedder's full model
        (a remote model's query costs a request; a cached one, none)."""
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def _embed_and_store(self, missing: list[str], texts: dict[str, str]) -> dict[str, np.ndarray]:
        fresh = self._inner.embed([texts[h] for h in missing])
        items = list(zip(missing, fresh, strict=True))
        # A short transaction of its own: no connection is held while the model works.
        with Session(self._engine) as session, session.begin():
            embedding_cache.store(session, self.name, items)
        return dict(items)

    def _check_dims(self, vectors: dict[str, np.ndarray]) -> None:
        wrong = next((v for v in vectors.values() if v.shape != (self.dim,)), None)
        if wrong is not None:
            raise ConfigurationError(
                f"embedding_cache holds {wrong.shape[0]}-dimensional vectors for "
                f"{self.name!r} but the embedder makes {self.dim}; purge that model's cache "
                "(storage.embedding.purge_model) or set ARCHIVIST_EMBEDDING__CACHE=false"
            )
