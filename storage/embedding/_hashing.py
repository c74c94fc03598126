"""Offline default embedder: signed feature hashing of words and character n-grams.

Trade-off: it needs no model and no download, is deterministic across machines and
Python versions, and works for any script (character n-grams catch inflections and
typos). It knows no synonyms or meaning: "car" and "automobile" are unrelated to it.
For semantic recall configure a model-based embedder; the dimension is part of the
schema, so pick it before the first `archivist db upgrade`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

_TOKEN = re.compile(r"\w+", re.UNICODE)
_MAX_TOKENS = 512
_NGRAM = 3


class HashingEmbedder:
    """Word unigrams plus character trigrams, hashed into ``dim`` signed buckets."""

    # Gibberish and emoji reach cosines of about 0.15 with unrelated text through shared
    # character trigrams: a query whose best candidate shares no word with it and stays
    # under this is about nothing in memory (``storage.retrieval`` returns no hits). Common
    # words ("what is the?") reach 0.3, as high as real matches: this model cannot tell.
    min_cosine = 0.2

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def name(self) -> str:
        return f"hashing-v1-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed each text as an L2-normalised float32 row (one bincount for the batch)."""
        n, dim = len(texts), self._dim
        idx_parts: list[np.ndarray] = []
        sign_parts: list[np.ndarray] = []
        for row, text in enumerate(texts):
            # Distinct tokens only: a word repeated in a long message should not drown the rest.
            tokens = dict.fromkeys(_TOKEN.findall(text.lower())[:_MAX_TOKENS]) or {"": None}
            for token in tokens:
                idx, sign = self._features(token)
                idx_parts.append(idx + row * dim)
                sign_parts.append(sign)
        flat = np.bincount(
            np.concatenate(idx_parts) if idx_parts else np.zeros(0, dtype=np.intp),
            weights=np.concatenate(sign_parts) if sign_parts else None,
            minlength=n * dim,
        )
        out = flat.reshape(n, dim).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out[(norms == 0).ravel(), 0] = 1.0  # every text, even an empty one, gets a unit vector
        norms[norms == 0] = 1.0
        normalised: np.ndarray = out / norms
        return normalised

    def embed_query(self, text: str) -> np.ndarray:
        """The text's `embed` vector."""
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def _features(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        grams = [f"w:{token}"]
        padded = f"<{token}>"
        grams += [padded[i : i + _NGRAM] for i in range(max(1, len(padded) - _NGRAM + 1))]
        hashes = np.array([zlib.crc32(g.encode("utf-8")) for g in grams], dtype=np.uint64)
        idx = (hashes % self._dim).astype(np.intp)
        sign = np.where((hashes >> 31) & 1, -1.0, 1.0).astype(np.float32)
        sign[0] *= 2.0  # the whole word counts more than any one of its n-grams
        if len(self._cache) < 200_000:
            self._cache[token] = (idx, sign)
        return idx, sign
