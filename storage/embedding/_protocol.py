"""The embedder protocol: what the sync, the queue and retrieval need of a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed size; the same text gives the same vector.

    An embedder may also have ``min_cosine``: the cosine below which its vectors say
    nothing about relevance. A query none of whose candidates reaches it or shares a word
    with it gets no hits (``ARCHIVIST_RETRIEVAL__MIN_COSINE`` overrides; without either, 0).
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray:
        """A search query's vector, compared with vectors ``embed`` made: ``embed``'s own,
        or one from a cheaper encoder of the same model (the local model's int8 graph)."""
        ...
