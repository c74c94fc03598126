"""Arrays as statements' parameters, in PostgreSQL's binary form: ids, distances, words.

A search passes its HNSW walk's hundred-odd neighbours to the candidates statement as two
arrays (``bigint[]`` ids, ``float8[]`` distances). As Python lists, psycopg dumped them as
array text, element by element in Python (each number printed, tested for quotes and
joined): 0.13 ms per statement here. ``Int8Array`` and ``Float8Array`` pack them once with
numpy into the binary form ``array_recv`` reads (0.006 ms), the same values: a distance
goes as its eight bytes, exactly the float the walk returned.

A search's short arrays (its tiers, the query's lexemes and their idfs, the words whose
document counts it asks for) cost psycopg as much each, whatever their length: the list's
type found from its elements, then each element dumped through its own dumper. As a
``TextArray`` (and ``Float8Array``), 4-5 us less each in a tight loop, about a dozen a
search; the same values reach PostgreSQL (tested).

Registered on psycopg's global adapters when this module is imported, which
``storage.server.engine`` does before it makes any connection (``query_vector`` says why).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

import numpy as np
import psycopg
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper
from psycopg.pq import Format

INT8_OID, INT8_ARRAY_OID = 20, 1016
FLOAT8_OID, FLOAT8_ARRAY_OID = 701, 1022
TEXT_OID, TEXT_ARRAY_OID = 25, 1009


class _Packed:
    """A one-dimensional array of eight-byte numbers without NULLs, packed for
    ``array_recv``: its header (dimensions, no NULLs, the element type, length, lower bound
    1), then each element's length and big-endian value. Iterates over its values."""

    __slots__ = ("data", "values")
    element_oid: int
    dtype: str

    def __init__(self, values: Iterable[float]) -> None:
        self.values = tuple(values)
        if not self.values:
            self.data = struct.pack(">iiI", 0, 0, self.element_oid)  # no dimension: {}
            return
        items = np.empty(len(self.values), dtype=[("length", ">i4"), ("value", self.dtype)])
        items["length"] = 8
        items["value"] = self.values
        header = struct.pack(">iiIii", 1, 0, self.element_oid, len(self.values), 1)
        self.data = header + items.tobytes()

    def __iter__(self) -> Iterator[float]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.values)!r})"


class Int8Array(_Packed):
    """A ``bigint[]`` parameter (ids)."""

    __slots__ = ()
    element_oid, dtype = INT8_OID, ">i8"


class Float8Array(_Packed):
    """A ``float8[]`` parameter (distances)."""

    __slots__ = ()
    element_oid, dtype = FLOAT8_OID, ">f8"


class _ArrayDumper(Dumper):
    """A packed array's dumper. Its type goes on each dumper made (``oid``), not on the
    class: psycopg registers a class's fixed type as the dumper of every value of that type
    whose Python type it does not know (COPY's ``set_types``), where a list comes."""

    format = Format.BINARY
    array_oid: int

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        self.oid = self.array_oid


class _Int8ArrayDumper(_ArrayDumper):
    array_oid = INT8_ARRAY_OID

    def dump(self, obj: _Packed) -> bytes:
        return obj.data


class _Float8ArrayDumper(_Int8ArrayDumper):
    array_oid = FLOAT8_ARRAY_OID


class TextArray:
    """A ``text[]`` parameter (tiers, kinds, lexemes), None as NULL; iterates over its
    values. Encoded when dumped, in the connection's client encoding (what ``text_recv``
    reads)."""

    __slots__ = ("values",)

    def __init__(self, values: Iterable[str | None]) -> None:
        self.values = tuple(values)

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, value: object) -> bool:
        return value in self.values

    def __repr__(self) -> str:
        return f"TextArray({list(self.values)!r})"


class _TextArrayDumper(_ArrayDumper):
    array_oid = TEXT_ARRAY_OID

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        self._encoding = self.connection.info.encoding if self.connection else "utf-8"

    def dump(self, obj: TextArray) -> bytes:
        if not obj.values:
            return struct.pack(">iiI", 0, 0, TEXT_OID)  # no dimension: {}
        items = [None if v is None else v.encode(self._encoding) for v in obj.values]
        nulls = None in items
        parts = [struct.pack(">iiIii", 1, nulls, TEXT_OID, len(items), 1)]
        for item in items:
            parts += (_NULL,) if item is None else (len(item).to_bytes(4, "big"), item)
        return b"".join(parts)


_NULL = (-1).to_bytes(4, "big", signed=True)  # an element's length: NULL

psycopg.adapters.register_dumper(Int8Array, _Int8ArrayDumper)
psycopg.adapters.register_dumper(Float8Array, _Float8ArrayDumper)
psycopg.adapters.register_dumper(TextArray, _TextArrayDumper)
