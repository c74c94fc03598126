"""Embedders: the protocol, the offline default, OpenAI-compatible endpoints, the cache."""

from tasks.embedding.cached import CachedEmbedder
from tasks.embedding.hashing import HashingEmbedder
from tasks.embedding.http import OpenAIEmbedder
from tasks.embedding.types import Embedder, make_embedder

__all__ = ["CachedEmbedder", "Embedder", "HashingEmbedder", "OpenAIEmbedder", "make_embedder"]
