"""Embedders: the protocol, the local model (default), hashing, OpenAI-compatible endpoints,
the cache.

In the store's layer because both sides need them: the sync and the queue embed what they
write, and retrieval embeds each query. The store records which model made its vectors.
"""

from typing import TYPE_CHECKING, Any

from storage.embedding._batches import token_batches
from storage.embedding._cached import CachedEmbedder
from storage.embedding._factory import make_embedder, preload_model
from storage.embedding._graph_cache import default_cache_dir
from storage.embedding._hashing import HashingEmbedder
from storage.embedding._local import LocalEmbedder, float32_parts, preload
from storage.embedding._once import EmbedOnce
from storage.embedding._package import PUBLISHED_SHA256, model_folder, verified
from storage.embedding._protocol import Embedder
from storage.embedding._tokens import count_tokens
from storage.embedding._turns import PREVIOUS_TURN_SQL, TURN_HASHES_SQL, TURN_TEXT_SQL, turn_text
from storage.embedding.cache import lookup, purge_model, store, text_hash

if TYPE_CHECKING:
    from storage.embedding._http import OpenAIEmbedder


def __getattr__(name: str) -> Any:
    # OpenAIEmbedder on first use: httpx is not loaded by commands that never call out.
    if name == "OpenAIEmbedder":
        from storage.embedding._http import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "float32_parts",
    "CachedEmbedder",
    "EmbedOnce",
    "Embedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "PUBLISHED_SHA256",
    "default_cache_dir",
    "lookup",
    "make_embedder",
    "model_folder",
    "preload",
    "preload_model",
    "purge_model",
    "store",
    "count_tokens",
    "text_hash",
    "token_batches",
    "verified",
    "PREVIOUS_TURN_SQL",
    "TURN_HASHES_SQL",
    "TURN_TEXT_SQL",
    "turn_text",
]
