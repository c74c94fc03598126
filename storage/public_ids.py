"""The ids a tenant sees: opaque, so that they tell nothing of the other tenants' volume.

Memories, queue items, documents and chunks take their ids from sequences that every
namespace shares: the gap between two of a tenant's own memory ids was the number of
memories all the others wrote meanwhile. The API and the MCP server show each such id as
``PublicIds.show(kind, id)``, a keyed permutation of it, and take it back with ``take``;
everything inside the store (flows, the CLI, the memory files on disk) keeps the real ids.

The permutation is a 10-round Feistel network over 52 bits (two halves of 26) whose round
function is keyed BLAKE2b, with the kind of id as its personalisation, so the same number
is a different public id for a memory and for a queue item. Public ids run from 1 to 2**52:
exact in a JavaScript number, as a JSON client reads it. The key is random, made by
migration 0025 and kept in ``archivist_public_ids`` (the serving role may read it); all
the serving processes of a store show the same ids. Without the key, a tenant's ids look
random and unordered: neither their differences nor their order say how many ids were
taken in between.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Literal, get_args

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

Kind = Literal["memory", "queue", "document", "chunk"]
BITS = 52
HALF = BITS // 2
MASK = (1 << HALF) - 1
ROUNDS = 10
LARGEST = 1 << BITS  # the largest public id; real ids must be below it
SHOWN = 1 << 16  # public ids kept for the next time (about 100 bytes each)
KEY = text("SELECT key FROM archivist_public_ids")


class PublicIds:
    """Real ids to public ones and back, under one store's key."""

    def __init__(self, key: bytes) -> None:
        if not 16 <= len(key) <= 64:
            raise ValueError("a public id key has 16 to 64 bytes")
        self._key = key
        # Each kind's keyed BLAKE2b, copied for a round: keying a new one hashes a whole
        # block of key first, half the cost of a round (a search shows 10 to 30 ids).
        self._keyed = {
            kind: hashlib.blake2b(digest_size=4, key=key, person=kind.encode())
            for kind in get_args(Kind)
        }
        # The same memories come back search after search: each showing of an id costs
        # ten rounds (about 20 us), a search's ten to thirty of them 0.2 to 0.6 ms.
        self._shown = functools.lru_cache(maxsize=SHOWN)(self._show)

    @classmethod
    def load(cls, session: Session | Connection) -> PublicIds:
        """The store's key (migration 0025)."""
        return cls(bytes(session.execute(KEY).scalar_one()))

    def show(self, kind: Kind, real: int) -> int:
        """The public id of real id ``real`` of ``kind`` (the last ``SHOWN`` kept)."""
        return self._shown(kind, real)

    def _show(self, kind: Kind, real: int) -> int:
        if not 0 <= real < LARGEST:
            raise ValueError(f"id {real} is outside what public ids cover")
        left, right = real >> HALF, real & MASK
        keyed = self._keyed[kind]
        for n in range(ROUNDS):
            left, right = right, left ^ _round(keyed, n, right)
        return (left << HALF | right) + 1

    def take(self, kind: Kind, public: int) -> int | None:
        """The real id behind public id ``public`` of ``kind``; None for a number that is
        no public id."""
        if not 1 <= public <= LARGEST:
            return None
        value = public - 1
        left, right = value >> HALF, value & MASK
        keyed = self._keyed[kind]
        for n in reversed(range(ROUNDS)):
            left, right = right ^ _round(keyed, n, left), left
        return left << HALF | right


def _round(keyed: hashlib.blake2b, n: int, half: int) -> int:
    """The round function of `PublicIds.show` and `take`: the kind's keyed BLAKE2b
    (``keyed``, copied) of the half (4 bytes) and the round (1 byte)."""
    digest = keyed.copy()
    digest.update((half << 8 | n).to_bytes(5, "big"))  # half's 4 bytes, then n's
    return int.from_bytes(digest.digest(), "big") & MASK
