"""The embedder protocol and the factory that builds the configured one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from storage.config import EmbeddingSettings


class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed size; the same text gives the same vector."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """Build the embedder the settings name."""
    from tasks.embedding.hashing import HashingEmbedder

    return HashingEmbedder(dim=settings.dim)
