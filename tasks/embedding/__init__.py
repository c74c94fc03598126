"""Embedders: the protocol and the offline default."""

from tasks.embedding.hashing import HashingEmbedder
from tasks.embedding.types import Embedder, make_embedder

__all__ = ["Embedder", "HashingEmbedder", "make_embedder"]
