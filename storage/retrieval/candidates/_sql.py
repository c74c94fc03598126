"""The statements behind retrieval, each kept whole and named (see ``storage.retrieval``)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import TextClause, text

# Planner settings for the rest of the transaction. The HNSW neighbours are fetched with
# sequential scans, bitmap scans and sorts off, so the index is the only way to answer,
# and planned for their namespace (a custom plan: how PostgreSQL picks the namespace's own
# index, storage.operations.ann); the exact re-run (when filters starved the index) and the
# candidates statement turn plain index scans off instead, which leaves bitmap scans (GIN,
# in heap order), and take the search's plan cache mode again (NULL: leave it).
# Iterative scans keep a filtered top-k complete in the common case.
PLANNER = text(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', :ef_search, true), "
    "set_config('enable_seqscan', :other, true), "
    "set_config('enable_bitmapscan', :other, true), "
    "set_config('enable_sort', :other, true), "
    "set_config('enable_indexscan', :indexscan, true), "
    "set_config('plan_cache_mode', coalesce(CAST(:plan_cache_mode AS text), "
    "current_setting('plan_cache_mode')), true)"
)

# Select-list items of a search's first statement, for the statements after it: PLANNER's
# exact settings, which the candidates statement needs (a search of a namespace without
# HNSW rows saves a round trip), the plan cache mode of its prepared statements
# (``_prepared``; NULL: the server's), and a commit that does not wait for the WAL flush:
# a search commits only access statistics, of which a crash of PostgreSQL may lose the
# last fraction of a second, never a memory (a statement of its own cost a round trip,
# 0.12 ms of PostgreSQL's CPU and 0.2 of the server's).
SEARCH_SETTINGS = """
           set_config('synchronous_commit', 'off', true),
           set_config('hnsw.iterative_scan', 'relaxed_order', true),
           set_config('hnsw.ef_search', :ef_search, true),
           set_config('enable_seqscan', 'on', true),
           set_config('enable_bitmapscan', 'on', true),
           set_config('enable_sort', 'on', true),
           set_config('enable_indexscan', 'off', true),
           set_config('plan_cache_mode', coalesce(CAST(:plan_cache_mode AS text),
                                                  current_setting('plan_cache_mode')), true)
"""

# The query's lexemes (runs of scripts without spaces as their character bigrams, as the
# stored ones: migration 0026), whether the namespace has memories in the HNSW index,
# whether it has document chunks and chunks in theirs (never cached: a stale "no" would
# hide those rows from search; the document chunks' part of the search reads the last two
# and the lexemes from here); and the search's settings. Each EXISTS is an index probe, if
# planned under the server's settings: under the search's (bitmap scans only), each reads
# every entry of the namespace's index (16 ms of PostgreSQL's CPU for the second search of
# a priming in a namespace of 156,000 memories): ``PLANNER_DEFAULTS`` goes first in a
# transaction that may hold them.
QUERY_TERMS = text(
    """
    SELECT tsvector_to_array(
               to_tsvector(CAST(:cfg AS regconfig), archivist_segmented(:query))) AS lexemes,
           EXISTS (SELECT 1 FROM memories WHERE namespace = :namespace AND ann_indexed)
               AS has_ann,
           EXISTS (SELECT 1 FROM document_chunks WHERE namespace = :namespace) AS has_docs,
           EXISTS (SELECT 1 FROM document_chunks WHERE namespace = :namespace AND ann_indexed)
               AS has_chunk_ann,
    """
    + SEARCH_SETTINGS
)
# The scan types the search's settings turn off, on again for the rest of the transaction:
# sent ahead of a search's first statement in a transaction where an earlier search may
# have left them (priming runs two searches in one), in the same round trip.
PLANNER_DEFAULTS = text(
    "SELECT set_config('enable_seqscan', 'on', true), "
    "set_config('enable_bitmapscan', 'on', true), "
    "set_config('enable_sort', 'on', true), "
    "set_config('enable_indexscan', 'on', true)"
)


# A search reads candidates from two tables, memories and document chunks, through the
# same statements, each built once per table by the builders below (``Candidates``
# describes a table: its columns, the filters only it has, its candidate row).
@dataclass(frozen=True)
class Candidates:
    """A table that search reads candidates from, as the statements below need it."""

    table: str
    alias: str  # of the table's row in the candidates statement's last step
    at: str  # the column a time range filters
    filters: str  # the table's own filters of a candidate (memories: tier, kinds)
    row: str  # the candidate row's columns (``_ranking`` reads them by name), over ``alias``
    joins: str  # what ``row`` reads besides the table's row
    stored_df: str  # the table of common words' counts the index step stores, over...
    stored_indexed_only: bool  # ...the rows in the HNSW index only (else: all the rows)


MEMORY_FILTERS = """
      AND tier = ANY(CAST(:tiers AS text[]))
      AND (CAST(:kinds AS text[]) IS NULL OR kind = ANY(CAST(:kinds AS text[])))"""

MEMORIES = Candidates(
    table="memories",
    alias="m",
    at="occurred_at",
    filters=MEMORY_FILTERS,
    row="""m.id, m.namespace, m.kind, m.content, m.importance, m.vehemence,
           m.access_count + coalesce(p.hits, 0) AS access_count,
           coalesce(p.last_accessed_at, m.last_accessed_at) AS last_accessed_at,
           m.occurred_at, m.created_at, m.session_id, m.message_ids, m.tier,
           1 - (m.embedding <=> CAST(:qvec AS vector)) AS cosine,
           CASE WHEN m.kind = 'long_term' THEN (
               SELECT l.memory_ids FROM long_term_entries l WHERE l.memory_id = m.id LIMIT 1
           ) END AS sources,""",
    joins="LEFT JOIN memory_access_pending p ON p.memory_id = m.id AND p.namespace = m.namespace",
    stored_df="namespace_terms",
    stored_indexed_only=False,
)

# A chunk's row has a memory's columns (kind ``doc``, the chunk's importance, the time its
# text was ingested as ``occurred_at``, no accesses), plus its document's provenance.
CHUNKS = Candidates(
    table="document_chunks",
    alias="c",
    at="created_at",
    filters="",
    row="""c.id, c.namespace, 'doc' AS kind, c.text AS content, c.importance,
           0.0 AS vehemence, 0 AS access_count, NULL::timestamptz AS last_accessed_at,
           c.created_at AS occurred_at, c.created_at, NULL::text AS session_id,
           ARRAY[]::text[] AS message_ids, 'document' AS tier, NULL::bigint[] AS sources,
           1 - (c.embedding <=> CAST(:qvec AS vector)) AS cosine,
           d.id AS document_id, d.uri, d.title, d.tag, c.heading, c.char_start, c.char_end,""",
    joins="JOIN documents d ON d.id = c.document_id",
    stored_df="namespace_chunk_terms",
    stored_indexed_only=True,
)


def _window(source: Candidates) -> str:
    """The search's filters of a row: the table's own and the time range."""
    return (
        source.filters
        + f"""
      AND (CAST(:start AS timestamptz) IS NULL OR {source.at} >= :start)
      AND (CAST(:end AS timestamptz) IS NULL OR {source.at} < :end)"""
    )


def ann_neighbours(source: Candidates) -> TextClause:
    """Dense neighbours among the HNSW-indexed rows of the namespace."""
    return text(
        f"""
    SELECT id, embedding <=> CAST(:qvec AS vector) AS dist FROM {source.table}
    WHERE namespace = :namespace AND ann_indexed{_window(source)}
    ORDER BY embedding <=> CAST(:qvec AS vector) LIMIT :n
    """
    )


def term_stats(source: Candidates) -> TextClause:
    """BM25 statistics of a namespace: its size and mean lexical length (when asked), and
    the document frequency of the given lexemes.

    The size: stored by the index step for the rows in the namespace's HNSW index
    (namespace_sizes, migration 0029) plus the rows not in it yet, counted through the
    partial index of unindexed rows; a namespace without a stored size is counted whole
    (a small one: few rows). Counting a large namespace whole visited every row (670 ms for
    156,000 memories). The document frequencies: stored by the index step for large
    namespaces' common words (memories': namespace_terms, over all the namespace's rows;
    document chunks': namespace_chunk_terms, migration 0031, over its indexed rows, to which
    the unindexed rows holding the word are added, found as for the size: :plain is the
    lexeme as a tsquery), else counted live, capped: a term in more than :df_cap rows is
    common whatever its exact count. Counted live, a lexeme is looked up as its namespace's
    term of scoped_tsv (:terms, migration 0018); the namespace test is a filter (IS TRUE),
    not an index condition, which would AND the namespace's whole btree into each lookup."""
    counted = f"""(SELECT count(*) FROM (
                    SELECT 1 FROM {source.table} r
                    WHERE r.scoped_tsv @@ CAST(t.term AS tsquery)
                      AND (r.namespace = :namespace) IS TRUE
                    LIMIT :df_cap) x)"""
    stored = "nt.df"
    if source.stored_indexed_only:
        stored = f"""nt.df + (SELECT count(*) FROM {source.table} u
                               WHERE u.namespace = :namespace AND NOT u.ann_indexed
                                 AND u.tsv @@ CAST(t.plain AS tsquery))"""
    counted = f"""coalesce(
           (SELECT {stored} FROM {source.stored_df} nt
            WHERE nt.namespace = :namespace AND nt.lexeme = t.lexeme),
           {counted})"""
    return text(
        f"""
    WITH stored AS (
        SELECT rows, lex_len FROM namespace_sizes
        WHERE :with_size AND namespace = :namespace AND source = '{source.table}'
    ), size AS (
        SELECT s.rows + u.rows AS rows, s.lex_len + u.lex_len AS lex_len
        FROM stored s CROSS JOIN (
            SELECT count(*) AS rows, coalesce(sum(lex_len), 0) AS lex_len FROM {source.table}
            WHERE :with_size AND namespace = :namespace AND NOT ann_indexed) u
        UNION ALL
        SELECT count(*), coalesce(sum(lex_len), 0) FROM {source.table}
        WHERE :with_size AND namespace = :namespace AND NOT EXISTS (SELECT FROM stored)
        HAVING NOT EXISTS (SELECT FROM stored)
    )
    SELECT CASE WHEN :with_size THEN (SELECT rows FROM size) END AS n_docs,
           CASE WHEN :with_size THEN (
               SELECT CASE WHEN rows > 0 THEN CAST(lex_len AS float8) / rows ELSE 0 END
               FROM size) END AS avg_len,
           t.lexeme,
           {counted} AS df
    FROM (SELECT NULL::text AS lexeme, NULL::text AS term, NULL::text AS plain UNION ALL
          SELECT * FROM unnest(CAST(:lexemes AS text[]), CAST(:terms AS text[]),
                               CAST(:plain AS text[]))) t
    """
    )


def candidates(source: Candidates) -> TextClause:
    """A search's candidate rows of one table, with every factor's raw input.

    Dense top-n: the HNSW neighbours passed in, and the other rows exactly; lexical over
    the query of the lexemes that narrow the search (lexical_params), found through
    scoped_tsv as in ``term_stats`` and ordered by ts_rank over tsv. The scopes repeat the
    same filters so that each keeps its own index. BM25 is computed over PostgreSQL's own
    lexemes: tf from the positions in the row's tsvector, idf passed in (``term_stats``),
    length from lex_len; a candidate without any of the query's lexemes (:any_lexeme, a
    match test) scores 0 without unnesting its own, and one with some unnests only those:
    its lexemes carry no weights (all D), so the query's, marked A by setweight, are what
    ts_filter keeps, with their positions (0.1 ms less of PostgreSQL's CPU per statement
    than unnesting every lexeme of each candidate)."""
    table, r, window = source.table, source.alias, _window(source)
    return text(
        f"""
    WITH dense_ann AS (
        SELECT * FROM unnest(CAST(:ann_ids AS bigint[]), CAST(:ann_dists AS float8[]))
            AS a(id, dist)
    ), dense_exact AS (
        SELECT id, embedding <=> CAST(:qvec AS vector) AS dist FROM {table}
        WHERE namespace = :namespace AND NOT ann_indexed{window}
        ORDER BY 2 LIMIT :n
    ), dense AS (
        SELECT id FROM (SELECT * FROM dense_ann UNION ALL SELECT * FROM dense_exact) d
        ORDER BY dist LIMIT :n
    ), lexical AS (
        SELECT id FROM {table}
        WHERE CAST(:scoped_tsquery AS text) IS NOT NULL
          AND scoped_tsv @@ CAST(:scoped_tsquery AS tsquery)
          AND (namespace = :namespace) IS TRUE{window}
        ORDER BY ts_rank(tsv, CAST(:tsquery AS tsquery), 1) DESC, id DESC LIMIT :n_lexical
    ), candidates AS (SELECT id FROM dense UNION SELECT id FROM lexical)
    SELECT {source.row}
           CASE WHEN {r}.tsv @@ CAST(:any_lexeme AS tsquery) THEN (
               SELECT sum(t.idf * (cardinality(u.positions) * (:k1 + 1))
                          / (cardinality(u.positions)
                             + :k1 * (1 - :b + :b * {r}.lex_len / greatest(:avg_len, 1))))
               FROM unnest(ts_filter(setweight({r}.tsv, 'A', CAST(:lexemes AS text[])), '{{a}}')) u
               JOIN unnest(CAST(:lexemes AS text[]), CAST(:idfs AS float8[])) AS t(lexeme, idf)
                 ON t.lexeme = u.lexeme) ELSE 0 END AS bm25
    FROM candidates k JOIN {table} {r} ON {r}.id = k.id
    {source.joins}
    """
    )


ANN_NEIGHBOURS = ann_neighbours(MEMORIES)
TERM_STATS = term_stats(MEMORIES)
CANDIDATES = candidates(MEMORIES)

EXPLAIN_ANN = text("EXPLAIN (COSTS OFF) " + ANN_NEIGHBOURS.text)
EXPLAIN_CANDIDATES = text("EXPLAIN (COSTS OFF) " + CANDIDATES.text)
# The chunks' HNSW walk, for a namespace with indexed chunks (each its own index).
HAS_INDEXED_CHUNKS = text(
    "SELECT EXISTS (SELECT 1 FROM document_chunks WHERE namespace = :namespace AND ann_indexed)"
)
EXPLAIN_CHUNK_ANN = text("EXPLAIN (COSTS OFF) " + ann_neighbours(CHUNKS).text)

# One round trip for all returned hits: the access-log row of the search (its hits' ids in
# rank order, migration 0020), and a pending access (``storage.operations.access``) for
# each hit still in the hot table, upserted in id order, the order a fold locks them in.
# The last access is the last one written, as ``as_of`` says. The hits are found by id, the
# namespace a filter: as an index condition, the generic plan under the search's settings
# ANDed the namespace's whole btree into the lookup (156,000 entries, 2.5 ms of
# PostgreSQL's CPU a search in the 1M bench store's largest namespace).
RECORD_ACCESS = text(
    """
    WITH logged AS (
        INSERT INTO memory_access_log (namespace, context, accessed_at, memory_ids)
        VALUES (:namespace, :context, :at, CAST(:ids AS bigint[]))
    )
    INSERT INTO memory_access_pending AS p (memory_id, namespace, hits, last_accessed_at)
    SELECT id, namespace, 1, :at FROM memories
    WHERE id = ANY(CAST(:ids AS bigint[])) AND (namespace = :namespace) IS TRUE ORDER BY id
    ON CONFLICT (memory_id, namespace) DO UPDATE
    SET hits = p.hits + 1, last_accessed_at = excluded.last_accessed_at
    """
)

# The embeddings of some of a namespace's memories (the candidates of a question about now,
# ``_restated``), in pgvector's binary form: read by NumPy without parsing text.
EMBEDDINGS = text(
    """
    SELECT id, vector_send(embedding) AS vec FROM memories
    WHERE namespace = :namespace AND id = ANY(CAST(:ids AS bigint[]))
    """
)
