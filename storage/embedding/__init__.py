"""Embedders: the protocol, the local model (default), hashing, OpenAI-compatible endpoints,
the cache.

In the store's layer because both sides need them: the sync and the queue embed what they
write, and retrieval embeds each query. The store records which model made its vectors.
"""

from storage.embedding._cache import purge_model
from storage.embedding._cached import CachedEmbedder
from storage.embedding._factory import make_embedder, preload_model
from storage.embedding._hashing import HashingEmbedder
from storage.embedding._http import OpenAIEmbedder
from storage.embedding._local import LocalEmbedder
from storage.embedding._protocol import Embedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
    "preload_model",
    "purge_model",
]
