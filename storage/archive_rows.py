"""Memories as Arrow tables: one big binary SELECT out of ``memories``, one COPY back in.

The archive keeps every column a memory needs to come back unchanged (its id, vector as
``list<float32>``, counters, tier and provenance); the generated columns (``tsv``,
``lex_len``) are recomputed by PostgreSQL on restore.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import numpy as np
import pyarrow as pa
from pgvector.psycopg import register_vector
from psycopg import Connection
from sqlalchemy import text
from sqlalchemy.orm import Session

_TS = pa.timestamp("us", tz="UTC")
MEMORY_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("namespace", pa.string()),
        ("kind", pa.string()),
        ("content", pa.string()),
        ("content_key", pa.string()),
        ("embedding", pa.list_(pa.float32())),
        ("embedding_model", pa.string()),
        ("importance", pa.float64()),
        ("vehemence", pa.float64()),
        ("salience", pa.float64()),
        ("access_count", pa.int32()),
        ("last_accessed_at", _TS),
        ("tier", pa.string()),
        ("pinned", pa.bool_()),
        ("session_id", pa.string()),
        ("message_ids", pa.list_(pa.string())),
        ("run_id", pa.string()),
        ("extractor", pa.string()),
        ("occurred_at", _TS),
        ("created_at", _TS),
    ]
)
_NAMES = tuple(MEMORY_SCHEMA.names)
_TS_COLUMNS = ("last_accessed_at", "occurred_at", "created_at")

# One namespace's memories in a time span, in id order (unpinned unless asked); vectors as
# bytes (stored, or pgvector's send format) and times as epoch microseconds, so conversion
# to Arrow is a few array operations, not a row loop.
_FETCH = """
    SELECT id, namespace, kind, content, content_key, {vector} AS embedding,
           embedding_model, importance, vehemence, salience, access_count,
           (extract(epoch FROM last_accessed_at) * 1000000)::int8 AS last_accessed_at,
           tier, pinned, session_id, message_ids, run_id::text AS run_id, extractor,
           (extract(epoch FROM occurred_at) * 1000000)::int8 AS occurred_at,
           (extract(epoch FROM created_at) * 1000000)::int8 AS created_at
    FROM memories
    WHERE namespace = %(namespace)s AND occurred_at >= %(start)s AND occurred_at < %(end)s
      AND (%(with_pinned)s OR NOT pinned) AND id > %(after)s
    ORDER BY id LIMIT %(limit)s
"""
# Migration 0011 casts a vector to its stored bytes where it could (a superuser migrated).
STORED_BYTES_CAST = """
    SELECT EXISTS (
        SELECT 1 FROM pg_cast
        WHERE castsource = 'vector'::regtype AND casttarget = 'bytea'::regtype
          AND castmethod = 'b'
    )
"""
_STORED, _SENT = "CAST(embedding AS bytea)", "vector_send(embedding)"
_COPY_TYPES = (
    "int8 text text text text vector text float8 float8 float8 int4 timestamptz text bool "
    "text text[] uuid text timestamptz timestamptz"
).split()
# A fetch returns a batch of wide rows: parallel workers would only add copying them between
# processes (archival already runs two fetches at once), and the sort of a batch (about
# 90 MB for 50,000) fits in memory.
SERIAL_IN_MEMORY = (
    "SELECT set_config('max_parallel_workers_per_gather', '0', true), "
    "set_config('work_mem', '256MB', true)"
)
# Where a fetch of "every memory up to" a time starts (a day after timestamptz's year 1,
# so no time zone pushes it out of range).
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LIVE_SESSIONS = text("SELECT id FROM chat_sessions WHERE id = ANY(CAST(:ids AS text[]))")


class VectorBuffer:
    """Float32 memory for a fetch's vectors, reused from one fetch to the next by one
    caller, which must be done with the previous table first.

    Memory the kernel maps afresh is zeroed first; at a batch's 50 to 100 MB of vectors,
    that was a good part of archival's time."""

    def __init__(self) -> None:
        self.array = np.empty(0, dtype=np.float32)

    def take(self, rows: int, dim: int) -> np.ndarray:
        if self.array.size < rows * dim:
            self.array = np.empty(rows * dim, dtype=np.float32)
        return self.array[: rows * dim].reshape(rows, dim)


def _driver(session: Session) -> Connection[Any]:
    conn = cast(Connection[Any], session.connection().connection.driver_connection)
    register_vector(conn)
    return conn


def fetch_memories(
    session: Session,
    namespace: str,
    span: tuple[datetime, datetime],
    after: int,
    limit: int,
    *,
    with_pinned: bool = False,
    year_first: bool = False,
    vectors: VectorBuffer | None = None,
) -> pa.Table:
    """The next ``limit`` memories of a namespace that happened in [start, end), after id
    ``after`` (unpinned unless asked), as one Arrow table, in id order (``year_first``:
    by UTC year of ``occurred_at``, then id). Vectors go into ``vectors`` if given."""
    params = {
        "namespace": namespace,
        "start": span[0],
        "end": span[1],
        "after": after,
        "limit": limit,
        "with_pinned": with_pinned,
    }
    with _driver(session).cursor(binary=True) as cursor:
        cursor.execute(SERIAL_IN_MEMORY)
        found = cursor.execute(STORED_BYTES_CAST).fetchone()
        stored = bool(found and found[0])
        fetch = _FETCH.replace("{vector}", _STORED if stored else _SENT)
        # Streamed 1,000 rows at a time: libpq never buffers the whole batch (about 90 MB for
        # 50,000 rows) in one growing block that the kernel must map and zero afresh.
        rows = list(cursor.stream(fetch, params, size=1000))
    if year_first:
        rows.sort(key=_utc_year)  # stable: id order within a year
    return to_table(rows, vectors, stored_bytes=stored)


_OCCURRED = _NAMES.index("occurred_at")
# Where each UTC year starts, in epoch microseconds, for the years a timestamptz can hold.
_YEAR_STARTS = [
    (datetime(year, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC))
    // timedelta(microseconds=1)
    for year in range(1, 10_000)
]


def _utc_year(row: tuple[Any, ...]) -> int:
    return bisect_right(_YEAR_STARTS, row[_OCCURRED])


def to_table(
    rows: list[tuple[Any, ...]], vectors: VectorBuffer | None = None, *, stored_bytes: bool
) -> pa.Table:
    """Column-wise conversion of fetched rows (vectors stacked into one float32 buffer)."""
    if not rows:
        return MEMORY_SCHEMA.empty_table()
    columns = dict(zip(_NAMES, zip(*rows, strict=True), strict=True))
    arrays = []
    for name in _NAMES:
        field = MEMORY_SCHEMA.field(name)
        if name == "embedding":
            arrays.append(_vectors(columns[name], vectors or VectorBuffer(), stored_bytes))
        elif name in _TS_COLUMNS:
            arrays.append(pa.array(columns[name], type=pa.int64()).cast(_TS))
        else:
            arrays.append(pa.array(columns[name], type=field.type))
    return pa.Table.from_arrays(arrays, schema=MEMORY_SCHEMA)


# Vectors are converted this many rows at a time: the joined bytes of a piece stay small
# enough for the allocator to reuse their memory from one piece to the next.
_PIECE = 2048


def _vectors(values: tuple[Any, ...], buffer: VectorBuffer, stored_bytes: bool) -> pa.Array:
    """Vector bytes (int16 dim, int16 unused, float4s: big-endian from ``vector_send``, the
    server's own order if stored) to list<float32>: piece by piece, the headers dropped and
    the bytes put in order into ``buffer``."""
    sizes = {len(value) for value in values}
    if len(sizes) != 1:
        raise ValueError(f"vectors of different dimensions in one fetch: {sorted(sizes)} bytes")
    dim = (sizes.pop() - 4) // 4
    order = _stored_order(values[0], dim) if stored_bytes else ">"
    sent = np.dtype([("head", f"{order}i4"), ("x", f"{order}f4", (dim,))])
    matrix = buffer.take(len(values), dim)
    for start in range(0, len(values), _PIECE):
        piece = b"".join(values[start : start + _PIECE])
        matrix[start : start + _PIECE] = np.frombuffer(piece, dtype=sent)["x"]
    offsets = pa.array(np.arange(0, matrix.size + 1, dim, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))


def _stored_order(value: bytes, dim: int) -> str:
    """The byte order of a stored vector, read from its int16 dimension count."""
    for order in "<>":
        if int.from_bytes(value[:2], "little" if order == "<" else "big") == dim:
            return order
    raise ValueError(f"a stored vector's header does not say its {dim} dimensions")


def insert_rows(session: Session, table: pa.Table) -> int:
    """Put archived rows back into ``memories`` with their original ids (binary COPY).

    A row whose session has since been purged comes back without a session.
    """
    if table.num_rows == 0:
        return 0
    sessions = [s for s in table.column("session_id").to_pylist() if s is not None]
    live = set(session.execute(LIVE_SESSIONS, {"ids": sessions}).scalars())
    conn = _driver(session)
    with conn.cursor() as cursor:
        with cursor.copy(f"COPY memories ({', '.join(_NAMES)}) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(_COPY_TYPES)
            for row in table.to_pylist():
                row["embedding"] = np.asarray(row["embedding"], dtype=np.float32)
                if row["session_id"] not in live:
                    row["session_id"] = None
                cp.write_row([row[name] for name in _NAMES])
    return int(table.num_rows)
