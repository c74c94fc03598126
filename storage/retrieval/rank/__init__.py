"""Steps 2 and 3 of a search: fuse and rank. Each candidate's dense and lexical relevance
as shares of the query's best, fused with the other factors into one score
(``_ranking``), one place per source (``_sources``), which candidates newer ones restate
(``_restated``), the best turns of the sessions the best hits point to (``_sessions``),
and the turns next to the best turn hits (``_context``). Pure but for the three statements
that read candidate vectors, the pointed sessions' turns and neighbouring turns.
"""

from storage.retrieval.rank._context import anchors, in_context, neighbour_rows, with_context
from storage.retrieval.rank._ranking import (
    after_newer,
    make_hit,
    rank,
    ranked,
    relevance_parts,
    weights_for,
)
from storage.retrieval.rank._restated import (
    Restated,
    candidate_vectors,
    memory_ids,
    restated_for,
    restatements,
)
from storage.retrieval.rank._sessions import in_sessions, pointers, with_sessions
from storage.retrieval.rank._sources import one_per_source

__all__ = [
    "after_newer",
    "anchors",
    "candidate_vectors",
    "in_context",
    "in_sessions",
    "make_hit",
    "memory_ids",
    "neighbour_rows",
    "one_per_source",
    "pointers",
    "rank",
    "ranked",
    "relevance_parts",
    "Restated",
    "restated_for",
    "restatements",
    "weights_for",
    "with_context",
    "with_sessions",
]
