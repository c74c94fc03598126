"""A small in-process cache of BM25 statistics per namespace.

Counting a term's documents costs milliseconds in a large namespace, and the counts only
normalise scores, so they are kept for a while. Zero counts are never kept: a new
namespace or a new word must be found at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

from sqlalchemy import Connection, TextClause

from storage.retrieval.candidates._inputs import scoped_term, tsquery_term
from storage.retrieval.candidates._prepared import rows
from storage.server.binary_arrays import TextArray


class StatsCache:
    """Namespace sizes and term document frequencies, each valid for ``ttl`` seconds."""

    def __init__(
        self, ttl: float, max_entries: int = 200_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self.clock = clock
        self._lock = threading.Lock()
        self._sizes: dict[str, tuple[float, int, float]] = {}
        self._df: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()

    def size(self, namespace: str) -> tuple[int, float] | None:
        """(documents, mean lexical length) of the namespace, if known and fresh."""
        entry = self._sizes.get(namespace)
        if entry is None or entry[0] < self.clock():
            return None
        return entry[1], entry[2]

    def put_size(self, namespace: str, n_docs: int, avg_len: float) -> None:
        if self.ttl > 0 and n_docs > 0:
            with self._lock:
                self._sizes[namespace] = (self.clock() + self.ttl, n_docs, avg_len)

    def df(self, namespace: str, lexemes: Iterable[str]) -> dict[str, int]:
        """The fresh known document frequencies among ``lexemes``."""
        now, out = self.clock(), {}
        with self._lock:
            for lexeme in lexemes:
                entry = self._df.get((namespace, lexeme))
                if entry is not None and entry[0] >= now:
                    out[lexeme] = entry[1]
        return out

    def put_df(self, namespace: str, counts: dict[str, int]) -> None:
        if self.ttl <= 0:
            return
        expires = self.clock() + self.ttl
        with self._lock:
            for lexeme, count in counts.items():
                if count > 0:
                    self._df[(namespace, lexeme)] = (expires, count)
                    self._df.move_to_end((namespace, lexeme))
            while len(self._df) > self.max_entries:
                self._df.popitem(last=False)


def cached_term_stats(
    conn: Connection,
    stats: StatsCache,
    term_stats: TextClause,
    namespace: str,
    lexemes: list[str],
    df_cap: int,
    *,
    prepare: bool,
) -> tuple[tuple[int, float], dict[str, int]]:
    """(rows, mean lexical length) of the namespace and each lexeme's document count: from
    the cache, and what it lacks from ``term_stats`` (memories' or chunks') in one query,
    which looks each lexeme up as its ``scoped_tsv`` term (``terms``) or as itself
    (``plain``); ``prepare``: as a
    prepared statement (``_prepared``)."""
    size = stats.size(namespace)
    known = stats.df(namespace, lexemes)
    missing = [lexeme for lexeme in lexemes if lexeme not in known]
    if size is None or missing:
        params = {
            "namespace": namespace,
            "with_size": size is None,
            "lexemes": TextArray(missing),
            "terms": TextArray([scoped_term(namespace, lexeme) for lexeme in missing]),
            "plain": TextArray([tsquery_term(lexeme) for lexeme in missing]),
            "df_cap": df_cap,
        }
        found = rows(conn, term_stats, params, prepare=prepare)
        if size is None:
            size = (int(found[0].n_docs), float(found[0].avg_len))
            stats.put_size(namespace, *size)
        fetched = {r.lexeme: int(r.df) for r in found if r.lexeme is not None}
        stats.put_df(namespace, fetched)
        known |= fetched
    return size, known
