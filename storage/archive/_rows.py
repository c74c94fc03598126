"""Memories as Arrow tables: read out of ``memories`` in bulk (ADBC), one COPY back in.

The archive keeps every column a memory needs to come back unchanged (its id, vector as
``list<float32>``, counters, tier and provenance); the generated columns (``tsv``,
``lex_len``) are recomputed by PostgreSQL on restore.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pgvector.psycopg import register_vector
from psycopg import Connection, sql
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.server.engine import libpq_uri

if TYPE_CHECKING:
    from adbc_driver_manager.dbapi import Connection as AdbcConnection

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

# One namespace's memories in a time span, in id order (unpinned unless asked), vectors as
# bytes: stored, or pgvector's send format. The values are inlined as literals (quoted by
# psycopg): ADBC streams a statement without parameters through COPY, straight into Arrow
# batches of about 16 MB; with parameters, libpq would hold the whole result first.
_FETCH = """
    SELECT id, namespace, kind, content, content_key, {vector} AS embedding,
           embedding_model, importance, vehemence, salience, access_count, last_accessed_at,
           tier, pinned, session_id, message_ids, run_id::text AS run_id, extractor,
           occurred_at, created_at
    FROM memories
    WHERE namespace = {namespace} AND occurred_at >= {start} AND occurred_at < {end}
      AND ({with_pinned} OR NOT pinned) AND id > {after}
    ORDER BY id LIMIT {limit}
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
    "SELECT set_config('max_parallel_workers_per_gather', '0', false), "
    "set_config('work_mem', '256MB', false)"
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


class MemoryReader:
    """A connection of its own for reading memories in bulk, as Arrow tables.

    ADBC's PostgreSQL driver decodes the server's binary rows into Arrow columns in C; a
    Python driver builds a tuple and about twenty objects per row first, which was about
    half of what archival spent reading. Each read is its own statement (autocommit) and
    sees what is committed. Close it (or use it as a context manager) when done."""

    def __init__(self, engine: Engine) -> None:
        # Imported here: ADBC's DB-API imports pyarrow.dataset, and that pandas (about 0.3 s
        # of CPU for every process that imports archival, most of which never read in bulk).
        import adbc_driver_postgresql.dbapi as adbc

        self._conn: AdbcConnection = adbc.connect(libpq_uri(engine.url), autocommit=True)
        try:
            self._rows(SERIAL_IN_MEMORY)
            self.stored_bytes = bool(self._rows(STORED_BYTES_CAST).column(0)[0].as_py())
        except BaseException:
            self._conn.close()
            raise
        self._vector = sql.SQL(_STORED if self.stored_bytes else _SENT)

    def _rows(self, query: str) -> pa.Table:
        with self._conn.cursor() as cursor:
            cursor.execute(query)
            return cursor.fetch_arrow_table()

    def memories(
        self,
        namespace: str,
        span: tuple[datetime, datetime],
        after: int,
        limit: int,
        *,
        pinned: bool,
    ) -> pa.Table:
        values = {"namespace": namespace, "start": span[0], "end": span[1]}
        values |= {"with_pinned": pinned, "after": after, "limit": limit}
        literals = {name: sql.Literal(value) for name, value in values.items()}
        return self._rows(sql.SQL(_FETCH).format(vector=self._vector, **literals).as_string())

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> MemoryReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page(NamedTuple):
    """Which rows of an id-ordered read: at most ``limit``, of ids above ``after``."""

    after: int
    limit: int


def fetch_memories(
    reader: MemoryReader,
    namespace: str,
    span: tuple[datetime, datetime],
    page: Page,
    *,
    with_pinned: bool = False,
    year_first: bool = False,
    vectors: VectorBuffer | None = None,
) -> pa.Table:
    """The page's memories of a namespace that happened in [start, end) (unpinned unless
    asked), as one Arrow table, in id order (``year_first``: by UTC year of
    ``occurred_at``, then id). Vectors go into ``vectors`` if given."""
    found = reader.memories(namespace, span, page.after, page.limit, pinned=with_pinned)
    if found.num_rows == 0:
        return MEMORY_SCHEMA.empty_table()
    order = _year_order(found.column("occurred_at")) if year_first else None
    columns: list[pa.Array | pa.ChunkedArray] = []
    for field in MEMORY_SCHEMA:
        if field.name == "embedding":
            embedding = found.column("embedding")
            buffer = vectors or VectorBuffer()
            columns.append(
                vector_column(embedding, buffer, stored_bytes=reader.stored_bytes, order=order)
            )
        else:
            column = found.column(field.name)
            columns.append((column if order is None else column.take(order)).cast(field.type))
    return pa.Table.from_arrays(columns, schema=MEMORY_SCHEMA)


def _year_order(occurred: pa.ChunkedArray) -> np.ndarray | None:
    """Row order by UTC year (stable: id order within a year); None if already so."""
    years = pc.year(occurred).to_numpy()
    if bool((np.diff(years) >= 0).all()):
        return None
    return np.argsort(years, kind="stable")


def vector_column(
    column: pa.ChunkedArray, buffer: VectorBuffer, *, stored_bytes: bool, order: np.ndarray | None
) -> pa.Array:
    """Vector bytes (int16 dim, int16 unused, float4s: big-endian from ``vector_send``, the
    server's own order if stored) to list<float32>, in ``order``: the headers dropped and
    the floats put in order into ``buffer``, chunk by chunk, straight from Arrow's data."""
    sizes = pc.unique(pc.binary_length(column)).to_pylist()
    if len(sizes) != 1 or column.null_count:
        raise ValueError(f"vectors of different dimensions in one fetch: {sizes} bytes")
    dim = (sizes[0] - 4) // 4
    chunks = [chunk for chunk in column.chunks if len(chunk)]
    byte_order = _stored_order(chunks[0][0].as_py(), dim) if stored_bytes else ">"
    record = np.dtype([("head", f"{byte_order}i4"), ("x", f"{byte_order}f4", (dim,))])
    matrix = buffer.take(len(column), dim)
    where = None
    if order is not None:  # row i of the result is row order[i] of the fetch
        where = np.empty_like(order)
        where[order] = np.arange(len(order))
    start = 0
    for chunk in chunks:
        _, offsets, data = chunk.buffers()
        first = np.frombuffer(offsets, dtype=np.int32, count=1, offset=4 * chunk.offset)[0]
        rows = np.frombuffer(data, dtype=record, count=len(chunk), offset=int(first))
        stop = start + len(chunk)
        matrix[slice(start, stop) if where is None else where[start:stop]] = rows["x"]
        start = stop
    offsets = pa.array(np.arange(0, matrix.size + 1, dim, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))


def _stored_order(value: bytes, dim: int) -> str:
    """The byte order of a stored vector, read from its int16 dimension count."""
    for order in "<>":
        if int.from_bytes(value[:2], "little" if order == "<" else "big") == dim:
            return order
    raise ValueError(f"a stored vector's header does not say its {dim} dimensions")


def _driver(session: Session) -> Connection[Any]:
    conn = cast(Connection[Any], session.connection().connection.driver_connection)
    register_vector(conn)
    return conn


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
