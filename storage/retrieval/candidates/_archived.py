"""Search over the cold tier: ``include_archived=True`` reads the namespace's Parquet files.

Archived rows are not in PostgreSQL, so this is slower than a hot search: every committed
file of the namespace is read (only the columns scoring needs), the dense candidates are
the top ``n`` by cosine computed with numpy, the lexical ones the rows whose text holds a
query lexeme; PostgreSQL then computes their BM25 over its own lexemes (with the hot
namespace's idf and mean length, or idf 1 when nothing is hot). The caller ranks them
with the hot candidates by the same composite score, then multiplies an archived hit's
score by ``ARCHIVE_PRIORITY`` (0.9), so a hot memory wins a tie. Imports no Prefect,
and pyarrow and fsspec only when a search reaches the cold tier: a hot search (the CLI's
``search``) starts without them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, text

from storage.kernel.errors import RetrievalError
from storage.retrieval._types import Hit

if TYPE_CHECKING:
    import pyarrow as pa
    from fsspec import AbstractFileSystem

ARCHIVE_PRIORITY = 0.9
_COLUMNS = [
    "id",
    "namespace",
    "kind",
    "content",
    "embedding",
    "embedding_model",
    "importance",
    "vehemence",
    "access_count",
    "last_accessed_at",
    "occurred_at",
    "created_at",
    "session_id",
    "message_ids",
]
ARCHIVE_FILES = text(
    "SELECT uri FROM archive_manifest "
    "WHERE namespace = :namespace AND kind = 'memories' AND status = 'committed' ORDER BY id"
)
# Lexemes as the hot tier's (migration 0026: runs of scripts without spaces as bigrams).
QUERY_LEXEMES = text(
    "SELECT tsvector_to_array(to_tsvector(CAST(:cfg AS regconfig), archivist_segmented(:query)))"
)
ARCHIVED_BM25 = text(
    """
    SELECT t.i, length(v.tsv) AS len,
           coalesce((
               SELECT sum(l.idf * (cardinality(u.positions) * (:k1 + 1))
                          / (cardinality(u.positions)
                             + :k1 * (1 - :b + :b * length(v.tsv) / greatest(:avg_len, 1))))
               FROM unnest(v.tsv) u
               JOIN unnest(CAST(:lexemes AS text[]), CAST(:idfs AS float8[])) AS l(lexeme, idf)
                 ON l.lexeme = u.lexeme), 0) AS bm25
    FROM unnest(CAST(:contents AS text[])) WITH ORDINALITY AS t(content, i)
    CROSS JOIN LATERAL (
        SELECT to_tsvector(CAST(:cfg AS regconfig), archivist_segmented(t.content)) AS tsv) v
    ORDER BY t.i
    """
)


@dataclass(frozen=True)
class ArchiveReader:
    """How to open archive files: one filesystem (tests, S3 clients) or fsspec options."""

    fs: AbstractFileSystem | None = None
    options: dict[str, Any] | None = None

    def read(self, uri: str) -> pa.Table:
        import fsspec
        import pyarrow.parquet as pq

        fs, path = (
            (self.fs, self.fs._strip_protocol(uri))
            if self.fs is not None
            else fsspec.core.url_to_fs(uri, **(self.options or {}))
        )
        with fs.open(path, "rb") as handle:
            return pq.read_table(handle, columns=_COLUMNS)


@dataclass(frozen=True)
class ArchivedRow:
    """A cold candidate with the fields ranking reads from a hot candidate row."""

    id: int
    namespace: str
    kind: str
    content: str
    importance: float
    vehemence: float
    access_count: int
    last_accessed_at: datetime | None
    occurred_at: datetime
    created_at: datetime
    session_id: str | None
    message_ids: list[str]
    cosine: float
    bm25: float
    tier: str = "archived"


@dataclass(frozen=True)
class ColdQuery:
    namespace: str
    query: str
    vector: np.ndarray
    n: int
    kinds: Sequence[str] | None
    start: datetime | None
    end: datetime | None
    cfg: str
    model: str  # the query vector's model: rows archived under another have no cosine

    @classmethod
    def of(cls, request: Any, n: int, cfg: str, model: str) -> ColdQuery:
        """From a retrieval request (namespace, query, vector, kinds and time span)."""
        fields = ("namespace", "query", "vector", "kinds", "start", "end")
        values = {name: getattr(request, name) for name in fields}
        return cls(**values, n=n, cfg=cfg, model=model)


def _read_files(conn: Connection, reader: ArchiveReader, namespace: str) -> list[pa.Table]:
    """Every committed file of the namespace. A restore or purge that committed meanwhile
    removes the file it replaced, so a missing file means: read the manifest again."""
    for attempt in (1, 2):
        uris = conn.execute(ARCHIVE_FILES, {"namespace": namespace}).scalars().all()
        try:
            return [reader.read(uri) for uri in uris]
        except FileNotFoundError as exc:
            if attempt == 2:
                raise RetrievalError(
                    f"archive file {exc.filename} of namespace {namespace!r} is missing; "
                    "check the archive URL and storage options"
                ) from exc
    return []


def _load(conn: Connection, reader: ArchiveReader, q: ColdQuery) -> pa.Table | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = _read_files(conn, reader, q.namespace)
    if not tables:
        return None
    table = pa.concat_tables(tables)
    mask = pc.greater_equal(table["id"], 0)
    if q.kinds:
        mask = pc.and_(mask, pc.is_in(table["kind"], value_set=pa.array(list(q.kinds))))
    if q.start is not None:
        mask = pc.and_(mask, pc.greater_equal(table["occurred_at"], pa.scalar(q.start)))
    if q.end is not None:
        mask = pc.and_(mask, pc.less(table["occurred_at"], pa.scalar(q.end)))
    table = table.filter(mask)
    return table if table.num_rows else None


def _cosines(table: pa.Table, vector: np.ndarray, model: str) -> np.ndarray:
    """Cosine of each row's vector with the query's; 0 for rows of another model.

    Archive files keep the vectors of the model that wrote them (``archivist reembed``
    re-embeds the hot table only), and vectors of two models are not comparable: such rows
    compete on their words alone until a restore re-embeds them.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.zeros(table.num_rows, dtype=np.float32)
    same = np.flatnonzero(pc.equal(table["embedding_model"], model).to_numpy(zero_copy_only=False))
    if same.size == 0:
        return out
    rows = table.take(pa.array(same, pa.int64()))
    flat = pc.list_flatten(rows["embedding"]).to_numpy()
    matrix = flat.reshape(rows.num_rows, -1).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(vector)), 1e-12)
    out[same] = matrix @ vector.astype(np.float32) / np.maximum(norms, 1e-12)
    return out


def _chosen(table: pa.Table, cosines: np.ndarray, lexemes: Sequence[str], n: int) -> list[int]:
    import pyarrow.compute as pc

    dense = np.argsort(-cosines, kind="stable")[:n].tolist()
    if not lexemes:
        return [int(i) for i in dense]
    pattern = "|".join(re.escape(t) for t in lexemes)
    hits = pc.match_substring_regex(table["content"], pattern, ignore_case=True)
    matched = np.flatnonzero(hits.to_numpy(zero_copy_only=False))
    lexical = matched[np.argsort(-cosines[matched], kind="stable")][: max(n, 50)].tolist()
    return [int(i) for i in dict.fromkeys(dense + lexical)]


def archived_candidates(
    conn: Connection, reader: ArchiveReader, q: ColdQuery, hot: dict[str, Any] | None
) -> list[ArchivedRow]:
    """The cold tier's candidates for a query, with the raw cosine and BM25 of each."""
    import pyarrow as pa

    table = _load(conn, reader, q)
    if table is None:
        return []
    lexemes = list(dict.fromkeys(conn.execute(QUERY_LEXEMES, q.__dict__).scalar_one()))
    cosines = _cosines(table, q.vector, q.model)
    picked = _chosen(table, cosines, lexemes, q.n)
    rows = table.take(pa.array(picked, pa.int64())).to_pylist()
    idf = dict(zip(hot["lexemes"], hot["idfs"], strict=True)) if hot else {}
    rare = max(idf.values(), default=1.0)  # a lexeme no hot memory has is at least as rare
    idf |= {t: rare for t in lexemes if t not in idf}
    params = {
        "contents": [r["content"] for r in rows],
        "cfg": q.cfg,
        "k1": 1.2,
        "b": 0.75,
        "lexemes": list(idf),
        "idfs": list(idf.values()),
        "avg_len": hot["avg_len"] if hot else 1.0,
    }
    bm25 = [float(r.bm25) for r in conn.execute(ARCHIVED_BM25, params)]
    keep = ("id", "namespace", "kind", "content", "importance", "vehemence", "access_count")
    times = ("last_accessed_at", "occurred_at", "created_at", "session_id", "message_ids")
    return [
        ArchivedRow(
            **{k: r[k] for k in keep + times},
            cosine=float(cosines[i]),
            bm25=score,
        )
        for r, i, score in zip(rows, picked, bm25, strict=True)
    ]


def demote(hits: Sequence[Hit]) -> list[Hit]:
    """Archived hits count ``ARCHIVE_PRIORITY`` of their score; best first again."""
    out = [
        replace(h, score=h.score * ARCHIVE_PRIORITY, factors={**h.factors, "archived": 1.0})
        if h.tier == "archived"
        else h
        for h in hits
    ]
    out.sort(key=lambda h: (-h.score, -h.occurred_at.timestamp(), h.memory_id))
    return out
