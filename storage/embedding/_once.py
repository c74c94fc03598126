"""Each text embedded once per run: repeats within a call and across a run's calls reuse
the vector already computed.

Conversations repeat themselves ("Thanks!", "ok", a pasted error, a bot's template), and a
sync calls the embedder once per batch of sessions, so the same text would otherwise be
embedded again in every batch it turns up in. The vectors a run computed are kept, most
recently used first, up to a memory budget; a text seen again is looked up by its digest.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from storage.embedding._protocol import Embedder


class EmbedOnce:
    """Wraps an embedder: ``embed`` passes it only texts it has not embedded yet, each once.

    Up to ``budget_bytes`` of vectors are remembered (least recently used go first), so a
    long-lived process stays bounded; 64 MiB hold about 43,000 vectors of 384 dimensions.
    ``computed`` and ``reused`` count texts (with repeats) over the wrapper's life.
    Queries pass straight through: they may take another graph (``embed_query``).
    Safe to call from several threads (a sync embeds one part of a batch while it extracts
    the next, whose summaries may embed through the same wrapper): the bookkeeping is
    locked, the model calls are not. A text two threads ask for at once may be embedded
    by both; the vector is the same.
    """

    def __init__(self, inner: Embedder, budget_bytes: int = 64 << 20) -> None:
        self._inner = inner
        per_vector = inner.dim * 4 + 200  # float32 data, plus the key and object overheads
        self._capacity = max(budget_bytes // per_vector, 0)
        self._seen: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.computed = 0
        self.reused = 0
        self._lock = threading.Lock()

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

    @property
    def inner(self) -> Embedder:
        """The wrapped embedder."""
        return self._inner

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows in input order; only the distinct texts not remembered reach the model."""
        keys = [_digest(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        wanted: dict[bytes, str] = {}
        with self._lock:
            for key, text in zip(keys, texts, strict=True):
                if key in found or key in wanted:
                    continue
                vector = self._seen.get(key)
                if vector is None:
                    wanted[key] = text
                else:
                    self._seen.move_to_end(key)
                    found[key] = vector
        fresh = self._inner.embed(list(wanted.values())) if wanted else np.zeros((0, self.dim))
        with self._lock:
            for key, vector in zip(wanted, fresh, strict=True):
                found[key] = self._remember(key, vector)
            self.computed += len(wanted)
            self.reused += len(texts) - len(wanted)
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)

    def _remember(self, key: bytes, vector: np.ndarray) -> np.ndarray:
        own = np.array(vector, dtype=np.float32)  # a copy: a row would keep its whole batch
        if self._capacity:
            self._seen[key] = own
            if len(self._seen) > self._capacity:
                self._seen.popitem(last=False)
        return own


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
