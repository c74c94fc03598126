"""Step 1 of a search: from a request to candidate rows. The request checked
(``_inputs``), the query's lexemes and term statistics (``_stats``), the dense and
lexical candidates of memories and document chunks in one statement per table
(``_sql``, ``_documents``), run as prepared statements (``_prepared``), and the cold
tier's candidates (``_archived``).
"""

from storage.retrieval.candidates._archived import (
    ArchiveReader,
    ColdQuery,
    archived_candidates,
    demote,
)
from storage.retrieval.candidates._documents import TERM_STATS as CHUNK_TERM_STATS
from storage.retrieval.candidates._documents import (
    doc_source,
    document_rows,
    memory_kinds,
    wants_documents,
)
from storage.retrieval.candidates._inputs import (
    DF_CAP,
    KINDS,
    aware,
    check_request,
    custom_weights,
    lexical_params,
    resolve_time_range,
    scoped_term,
    tsquery_term,
)
from storage.retrieval.candidates._memories import distinct_messages, memory_rows, plan_lines
from storage.retrieval.candidates._prepared import execute, pipelined, rows
from storage.retrieval.candidates._priming_sql import EPISODE_ENTITIES, RECENT_EPISODES, TOP_FACTS
from storage.retrieval.candidates._request import (
    POOL_HITS,
    Before,
    FirstRow,
    Request,
    first_row,
    neighbours,
    plan,
    pool_target,
    search_params,
    settled_rows,
)
from storage.retrieval.candidates._sql import (
    CANDIDATES,
    EMBEDDINGS,
    EXPLAIN_ANN,
    EXPLAIN_CANDIDATES,
    RECORD_ACCESS,
    TERM_STATS,
)
from storage.retrieval.candidates._stats import StatsCache

__all__ = [
    "Before",
    "FirstRow",
    "first_row",
    "archived_candidates",
    "ArchiveReader",
    "aware",
    "CANDIDATES",
    "check_request",
    "CHUNK_TERM_STATS",
    "ColdQuery",
    "custom_weights",
    "demote",
    "DF_CAP",
    "distinct_messages",
    "doc_source",
    "document_rows",
    "EMBEDDINGS",
    "EPISODE_ENTITIES",
    "execute",
    "EXPLAIN_ANN",
    "EXPLAIN_CANDIDATES",
    "KINDS",
    "lexical_params",
    "memory_kinds",
    "memory_rows",
    "neighbours",
    "plan",
    "pipelined",
    "plan_lines",
    "POOL_HITS",
    "pool_target",
    "RECENT_EPISODES",
    "RECORD_ACCESS",
    "Request",
    "resolve_time_range",
    "rows",
    "scoped_term",
    "search_params",
    "settled_rows",
    "StatsCache",
    "TERM_STATS",
    "TOP_FACTS",
    "tsquery_term",
    "wants_documents",
]
