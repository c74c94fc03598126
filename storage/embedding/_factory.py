"""Build the embedder the settings name: local, hashing or an OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Engine

from storage.embedding._cached import CachedEmbedder
from storage.embedding._graph_cache import default_cache_dir
from storage.embedding._hashing import HashingEmbedder
from storage.embedding._local import Graph, LocalEmbedder, graph_name
from storage.embedding._once import EmbedOnce
from storage.embedding._protocol import Embedder
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import EmbeddingSettings, RedactionSettings

if TYPE_CHECKING:
    import httpx


def make_embedder(
    settings: EmbeddingSettings,
    engine: Engine | None = None,
    client: httpx.Client | None = None,
    redaction: RedactionSettings | None = None,
    *,
    stored: str | None = None,
) -> Embedder:
    """Build the embedder the settings name, behind the vector cache when given an engine,
    and behind `EmbedOnce`: a run that builds it embeds each distinct text once.

    ``redaction`` applies to a remote model's input (``None``: the defaults, all on); the
    local and hashing embedders send nothing anywhere and see the text as it is.
    ``stored``: the model of the store's vectors (``storage.meta.stored_model``), whose
    graph the local model's ``store_encoder=auto`` keeps (None: a new store's,
    int8-static).
    """
    embedder = _base_embedder(settings, client, redaction, stored)
    if engine is not None and uses_cache(settings):
        embedder = CachedEmbedder(embedder, engine)
    return EmbedOnce(embedder)


def preload_model(settings: EmbeddingSettings) -> None:
    """Start loading the local model now, in the background (the other embedders need no
    loading): for a one-shot command that embeds one query after opening the store."""
    if settings.provider == "local":
        _local(settings, None).preload_queries()


def _local(settings: EmbeddingSettings, stored: str | None) -> LocalEmbedder:
    return LocalEmbedder(
        threads=settings.threads,
        batch_tokens=settings.batch_tokens,
        cache_dir=settings.graph_cache_dir or default_cache_dir(),
        graph=store_graph(settings, stored),
        query_graph=_query_graph(settings),
    )


def store_graph(settings: EmbeddingSettings, stored: str | None) -> Graph:
    """The local model's graph for the stored vectors: as set, or with ``auto`` the graph
    of the vectors the store holds (``stored``), the static int8 graph for any other."""
    if settings.store_encoder != "auto":
        return settings.store_encoder
    kept: tuple[Graph, ...] = ("float32", "int8")
    for graph in kept:
        if stored == graph_name(graph):
            return graph
    return "int8-static"


def _query_graph(settings: EmbeddingSettings) -> Graph:
    """The graph queries take: float32 through the vector cache, which keeps the model's
    own vectors and so embeds a query as it embeds a memory."""
    return "float32" if uses_cache(settings) else settings.query_encoder


def uses_cache(settings: EmbeddingSettings) -> bool:
    """Whether vectors go through the cache table.

    ``auto`` caches remote models only: the local embedders compute a query's vector in
    about 50 us (hashing) or 3 ms (local), near a cache round trip, and caching them would
    store every vector twice.
    """
    if settings.cache == "auto":
        return settings.provider == "openai"
    return settings.cache == "on"


def _base_embedder(
    settings: EmbeddingSettings,
    client: httpx.Client | None,
    redaction: RedactionSettings | None,
    stored: str | None,
) -> Embedder:
    if settings.provider == "hashing":
        return HashingEmbedder(dim=settings.dim)
    if settings.provider == "local":
        return _local(settings, stored)
    if settings.base_url is None or settings.model is None:  # the settings validator forbids it
        raise ConfigurationError(
            "the openai embedding provider needs ARCHIVIST_EMBEDDING__BASE_URL and "
            "ARCHIVIST_EMBEDDING__MODEL"
        )
    # Loaded only for a remote model: httpx and the redaction's phone-number data cost a
    # one-shot command about 0.1 s of imports.
    from storage.embedding._http import OpenAIEmbedder
    from storage.kernel.http_json import Connection
    from storage.redaction import RedactionPolicy

    connection = Connection(
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        timeout=settings.timeout_seconds,
        max_retries=settings.max_retries,
        client=client,
    )
    return OpenAIEmbedder(
        settings.base_url,
        settings.model,
        settings.dim,
        connection=connection,
        batch_size=settings.batch_size,
        redaction=RedactionPolicy.from_settings(redaction),
    )
