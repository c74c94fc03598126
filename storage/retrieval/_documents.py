"""Document chunks as search candidates, on the same scale as memories.

The chunks of the namespace's documents are found as memories are: the dense top ``n`` by
pgvector cosine (HNSW over the chunks ``archivist index`` flagged in large namespaces, an
exact scan of the rest) united with the lexical top over
the query's useful lexemes, BM25 computed over PostgreSQL's lexemes with the chunks' own
statistics (kept in a ``StatsCache`` of their own). Each candidate row has the columns of a
memory candidate (``kind`` ``"doc"``, the chunk's importance, the time its text was
ingested as ``occurred_at``, no accesses), so ``_ranking`` scores chunks and memories by
one composite formula, plus the document's provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from storage.kernel.settings import RetrievalSettings
from storage.retrieval._candidates import Request, first_params, neighbours, pool_target
from storage.retrieval._inputs import DF_CAP, lexical_params, vector_literal
from storage.retrieval._prepared import rows
from storage.retrieval._sql import SEARCH_SETTINGS
from storage.retrieval._stats import StatsCache, cached_term_stats
from storage.retrieval._types import DOC_KIND, DocSource

_BM25_K1, _BM25_B = 1.2, 0.75

# The query's lexemes, and whether the namespace has chunks in the HNSW index (never
# cached: a stale "no" would hide those rows from the dense candidates); and the search's
# settings (a search of chunks alone starts here).
QUERY_LEXEMES = text(
    """
    SELECT tsvector_to_array(
               to_tsvector(CAST(:cfg AS regconfig), archivist_segmented(:query))) AS lexemes,
           EXISTS (SELECT 1 FROM document_chunks WHERE namespace = :namespace AND ann_indexed)
               AS has_ann,
    """
    + SEARCH_SETTINGS
)
# Dense neighbours among the HNSW-indexed chunks of the namespace.
ANN_NEIGHBOURS = text(
    """
    SELECT id, embedding <=> CAST(:qvec AS vector) AS dist FROM document_chunks
    WHERE namespace = :namespace AND ann_indexed
      AND (CAST(:start AS timestamptz) IS NULL OR created_at >= :start)
      AND (CAST(:end AS timestamptz) IS NULL OR created_at < :end)
    ORDER BY embedding <=> CAST(:qvec AS vector) LIMIT :n
    """
)
# The namespace's chunk count and mean lexical length (when asked), and the capped document
# frequency of the given lexemes among its chunks (looked up as memories' TERM_STATS does).
TERM_STATS = text(
    """
    SELECT CASE WHEN :with_size THEN (
               SELECT count(*) FROM document_chunks WHERE namespace = :namespace) END AS n_docs,
           CASE WHEN :with_size THEN (
               SELECT coalesce(avg(lex_len), 0) FROM document_chunks
               WHERE namespace = :namespace) END AS avg_len,
           t.lexeme,
           (SELECT count(*) FROM (
                SELECT 1 FROM document_chunks c
                WHERE c.scoped_tsv @@ CAST(t.term AS tsquery)
                  AND (c.namespace = :namespace) IS TRUE
                LIMIT :df_cap) x) AS df
    FROM (SELECT NULL::text AS lexeme, NULL::text AS term UNION ALL
          SELECT * FROM unnest(CAST(:lexemes AS text[]), CAST(:terms AS text[]))) t
    """
)
CANDIDATES = text(
    """
    WITH dense_ann AS (
        SELECT * FROM unnest(CAST(:ann_ids AS bigint[]), CAST(:ann_dists AS float8[]))
            AS a(id, dist)
    ), dense_exact AS (
        SELECT id, embedding <=> CAST(:qvec AS vector) AS dist FROM document_chunks
        WHERE namespace = :namespace AND NOT ann_indexed
          AND (CAST(:start AS timestamptz) IS NULL OR created_at >= :start)
          AND (CAST(:end AS timestamptz) IS NULL OR created_at < :end)
        ORDER BY 2 LIMIT :n
    ), dense AS (
        SELECT id FROM (SELECT * FROM dense_ann UNION ALL SELECT * FROM dense_exact) d
        ORDER BY dist LIMIT :n
    ), lexical AS (
        SELECT id FROM document_chunks
        WHERE CAST(:scoped_tsquery AS text) IS NOT NULL
          AND scoped_tsv @@ CAST(:scoped_tsquery AS tsquery)
          AND (namespace = :namespace) IS TRUE
          AND (CAST(:start AS timestamptz) IS NULL OR created_at >= :start)
          AND (CAST(:end AS timestamptz) IS NULL OR created_at < :end)
        ORDER BY ts_rank(tsv, CAST(:tsquery AS tsquery), 1) DESC, id DESC LIMIT :n_lexical
    ), candidates AS (SELECT id FROM dense UNION SELECT id FROM lexical)
    SELECT c.id, c.namespace, 'doc' AS kind, c.text AS content, c.importance,
           0.0 AS vehemence, 0 AS access_count, NULL::timestamptz AS last_accessed_at,
           c.created_at AS occurred_at, c.created_at, NULL::text AS session_id,
           ARRAY[]::text[] AS message_ids, 'document' AS tier, NULL::bigint[] AS sources,
           1 - (c.embedding <=> CAST(:qvec AS vector)) AS cosine,
           CASE WHEN c.tsv @@ CAST(:any_lexeme AS tsquery) THEN (
               SELECT sum(t.idf * (cardinality(u.positions) * (:k1 + 1))
                          / (cardinality(u.positions)
                             + :k1 * (1 - :b + :b * c.lex_len / greatest(:avg_len, 1))))
               FROM unnest(c.tsv) u
               JOIN unnest(CAST(:lexemes AS text[]), CAST(:idfs AS float8[])) AS t(lexeme, idf)
                 ON t.lexeme = u.lexeme) ELSE 0 END AS bm25,
           d.id AS document_id, d.uri, d.title, d.tag, c.heading, c.char_start, c.char_end
    FROM candidates k JOIN document_chunks c ON c.id = k.id
    JOIN documents d ON d.id = c.document_id
    """
)


def wants_documents(kinds: Sequence[str] | None) -> bool:
    """Whether a search of these kinds includes document chunks (all kinds do)."""
    return kinds is None or DOC_KIND in kinds


def memory_kinds(kinds: Sequence[str] | None) -> list[str] | None:
    """The memory kinds among ``kinds`` (None: all of them; empty: none)."""
    return None if kinds is None else [k for k in kinds if k != DOC_KIND]


def document_rows(
    conn: Connection, request: Request, stats: StatsCache, settings: RetrievalSettings, cfg: str
) -> Sequence[Any]:
    """Candidate rows of the namespace's document chunks for this search."""
    n_docs, avg_len, has_ann, terms = _term_stats(conn, stats, cfg, request, settings)
    if n_docs == 0:
        return []
    n = pool_target(request.limit) * settings.overfetch
    params = {
        "namespace": request.namespace,
        "qvec": vector_literal(request.vector),
        "n": n,
        "n_lexical": max(n, 50),
        "start": request.start,
        "end": request.end,
        "k1": _BM25_K1,
        "b": _BM25_B,
        "avg_len": avg_len,
        **lexical_params(terms, n_docs, request.namespace),
    }
    params |= neighbours(conn, settings, params, int(has_ann), ANN_NEIGHBOURS)
    return rows(conn, CANDIDATES, params, prepare=settings.prepared_statements)


def _term_stats(
    conn: Connection, stats: StatsCache, cfg: str, request: Request, settings: RetrievalSettings
) -> tuple[int, float, bool, list[tuple[str, int]]]:
    """Chunk count, mean lexical length, has-index flag and (lexeme, df) pairs."""
    namespace, prepare = request.namespace, settings.prepared_statements
    asked = first_params(cfg, request.query, namespace, settings)
    found = rows(conn, QUERY_LEXEMES, asked, prepare=prepare)[0]
    lexemes = list(dict.fromkeys(found.lexemes))
    size, known = cached_term_stats(
        conn, stats, TERM_STATS, namespace, lexemes, DF_CAP, prepare=prepare
    )
    if size[0] == 0:
        return 0, 0.0, False, []
    return size[0], size[1], bool(found.has_ann), [(t, known.get(t, 0)) for t in lexemes]


def doc_source(row: Any) -> DocSource | None:
    """The provenance of a document chunk's candidate row; None for a memory's."""
    if row.kind != DOC_KIND:
        return None
    return DocSource(
        document_id=int(row.document_id),
        chunk_id=int(row.id),
        uri=row.uri,
        title=row.title,
        tag=row.tag,
        heading=row.heading,
        char_start=int(row.char_start),
        char_end=int(row.char_end),
    )
