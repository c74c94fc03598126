"""The embedder protocol and the factory that builds the configured one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from storage.config import EmbeddingSettings
from storage.errors import ConfigurationError

if TYPE_CHECKING:
    import httpx
    from sqlalchemy import Engine


class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed size; the same text gives the same vector."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def make_embedder(
    settings: EmbeddingSettings,
    engine: Engine | None = None,
    client: httpx.Client | None = None,
) -> Embedder:
    """Build the embedder the settings name, behind the vector cache when given an engine."""
    # Imported here: those modules import this one for the protocol.
    from tasks.embedding.cached import CachedEmbedder

    embedder = _base_embedder(settings, client)
    if engine is not None and uses_cache(settings):
        return CachedEmbedder(embedder, engine)
    return embedder


def uses_cache(settings: EmbeddingSettings) -> bool:
    """Whether vectors go through the cache table.

    ``auto`` caches remote models only: the local hashing embedder computes a vector in
    about 50 us, faster than a cache round trip, and caching it would store every vector
    twice.
    """
    if settings.cache == "auto":
        return settings.provider != "hashing"
    return settings.cache == "on"


def _base_embedder(settings: EmbeddingSettings, client: httpx.Client | None) -> Embedder:
    from tasks.embedding.hashing import HashingEmbedder
    from tasks.embedding.http import OpenAIEmbedder

    if settings.provider == "hashing":
        return HashingEmbedder(dim=settings.dim)
    if settings.base_url is None or settings.model is None:  # the settings validator forbids it
        raise ConfigurationError(
            "the openai embedding provider needs ARCHIVIST_EMBEDDING__BASE_URL and "
            "ARCHIVIST_EMBEDDING__MODEL"
        )
    return OpenAIEmbedder(
        settings.base_url,
        settings.model,
        settings.dim,
        client=client,
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        batch_size=settings.batch_size,
        timeout=settings.timeout_seconds,
        max_retries=settings.max_retries,
    )
