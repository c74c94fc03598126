"""Document chunks as search candidates, on the same scale as memories.

The chunks of the namespace's documents are found as memories are: the dense top ``n`` by
pgvector cosine (HNSW over the chunks ``archivist index`` flagged in large namespaces, an
exact scan of the rest) united with the lexical top over
the query's useful lexemes, BM25 computed over PostgreSQL's lexemes with the chunks' own
statistics (kept in a ``StatsCache`` of their own), through the memories' statements
built for the chunks' table (``_sql.CHUNKS``). Each candidate row has the columns of a
memory candidate (``kind`` ``"doc"``, the chunk's importance, the time its text was
ingested as ``occurred_at``, no accesses), so ``_ranking`` scores chunks and memories by
one composite formula, plus the document's provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from storage.kernel.settings import RetrievalSettings
from storage.retrieval._types import DOC_KIND, DocSource
from storage.retrieval.candidates._inputs import DF_CAP, lexical_params, vector_literal
from storage.retrieval.candidates._prepared import rows
from storage.retrieval.candidates._request import (
    FirstRow,
    Request,
    first_params,
    neighbours,
    pool_target,
    settled_rows,
)
from storage.retrieval.candidates._sql import (
    CHUNKS,
    SEARCH_SETTINGS,
    ann_neighbours,
    candidates,
    term_stats,
)
from storage.retrieval.candidates._stats import StatsCache, cached_term_stats

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
# The chunks' statements: memories' own, built for their table (``_sql.Candidates``).
ANN_NEIGHBOURS = ann_neighbours(CHUNKS)
TERM_STATS = term_stats(CHUNKS)
CANDIDATES = candidates(CHUNKS)


def wants_documents(kinds: Sequence[str] | None) -> bool:
    """Whether a search of these kinds includes document chunks (all kinds do)."""
    return kinds is None or DOC_KIND in kinds


def memory_kinds(kinds: Sequence[str] | None) -> list[str] | None:
    """The memory kinds among ``kinds`` (None: all of them; empty: none)."""
    return None if kinds is None else [k for k in kinds if k != DOC_KIND]


def document_rows(
    conn: Connection,
    request: Request,
    stats: StatsCache,
    settings: RetrievalSettings,
    cfg: str,
    first: FirstRow | None = None,
) -> Sequence[Any]:
    """Candidate rows of the namespace's document chunks for this search; ``first``: what
    the memories' first statement found (the lexemes, whether chunks are indexed), which
    then stands for this part's own first statement (its settings hold too)."""
    n_docs, avg_len, has_ann, terms = _term_stats(conn, stats, cfg, request, settings, first)
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
    conn: Connection,
    stats: StatsCache,
    cfg: str,
    request: Request,
    settings: RetrievalSettings,
    first: FirstRow | None,
) -> tuple[int, float, bool, list[tuple[str, int]]]:
    """Chunk count, mean lexical length, has-index flag and (lexeme, df) pairs."""
    namespace, prepare = request.namespace, settings.prepared_statements
    if first is None:
        asked = first_params(cfg, request.query, namespace, settings)
        found = settled_rows(conn, QUERY_LEXEMES, asked, prepare=prepare)[0]
        lexemes, has_ann = list(dict.fromkeys(found.lexemes)), bool(found.has_ann)
    else:
        lexemes, has_ann = first.lexemes, first.has_chunk_ann
    size, known = cached_term_stats(
        conn, stats, TERM_STATS, namespace, lexemes, DF_CAP, prepare=prepare
    )
    if size[0] == 0:
        return 0, 0.0, False, []
    return size[0], size[1], has_ann, [(t, known.get(t, 0)) for t in lexemes]


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
