"""The BM25 statistics cache: reuse within the TTL, never a cached zero, bounded size; and
which words choose the lexical candidates."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever
from storage.retrieval.candidates import DF_CAP, StatsCache, lexical_params
from storage.server.engine import Store
from tests.storage.memory_factory import put


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_and_zeros_are_never_kept() -> None:
    clock = Clock()
    cache = StatsCache(ttl=60, max_entries=2, clock=clock)
    cache.put_size("a", 10, 4.5)
    cache.put_size("empty", 0, 0.0)
    cache.put_df("a", {"lisbon": 3, "zebra": 0})

    assert cache.size("a") == (10, 4.5) and cache.size("empty") is None
    assert cache.df("a", ["lisbon", "zebra"]) == {"lisbon": 3}
    clock.now = 61
    assert cache.size("a") is None and cache.df("a", ["lisbon"]) == {}


def test_the_cache_is_bounded() -> None:
    cache = StatsCache(ttl=60, max_entries=2, clock=Clock())
    cache.put_df("a", {"x": 1, "y": 1, "z": 1})
    assert cache.df("a", ["x", "y", "z"]) == {"y": 1, "z": 1}


def test_a_new_word_is_found_at_once_despite_the_cache(store: Store) -> None:
    now = datetime(2026, 11, 20, tzinfo=UTC)
    put(store, "a", ["the kettle is broken", "tea time"], now)
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())
    retriever.search("a", "kettle samovar", as_of=now, record_access=False)  # caches "kettle"

    put(store, "a", ["bought a samovar in Tbilisi"], now)
    hits = retriever.search("a", "samovar", as_of=now, record_access=False)

    assert hits[0].content == "bought a samovar in Tbilisi"
    assert hits[0].factors["lexical"] == 1.0


def test_the_index_step_stores_common_words_and_search_uses_them(store: Store) -> None:
    from sqlalchemy import text

    from tasks.ann_index import TERM_MIN_DF, refresh_ann_index

    now = datetime(2026, 11, 20, tzinfo=UTC)
    put(store, "big", [f"kettle note {i}" for i in range(150)] + ["samovar from Tbilisi"], now)
    refresh_ann_index(store.engine, min_rows=100)
    put(store, "big", ["one more kettle"], now)
    refresh_ann_index(store.engine, min_rows=100)  # a second night replaces the counts
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT lexeme, df FROM namespace_terms WHERE namespace = 'big'"))
        stored = {lexeme: df for lexeme, df in rows}
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())

    hits = retriever.search("big", "samovar kettle", as_of=now, record_access=False)

    assert stored["kettl"] == 151 and "samovar" not in stored  # rare words are counted live
    assert TERM_MIN_DF > 1
    assert hits[0].content == "samovar from Tbilisi"  # the rare word outweighs the common one


def test_a_large_namespace_is_sized_from_the_index_step_plus_its_unindexed_rows(
    store: Store,
) -> None:
    from sqlalchemy import text

    from tasks.ann_index import refresh_ann_index

    now = datetime(2026, 11, 20, tzinfo=UTC)
    put(store, "big", [f"kettle note number {i}" for i in range(120)], now)
    put(store, "big2", [f"kettle {i}" for i in range(30)], now)  # look-alike, small
    put(store, "bi", ["kettle"], now)
    refresh_ann_index(store.engine, min_rows=100)
    with store.engine.connect() as conn:
        stored = conn.execute(
            text("SELECT namespace, rows, lex_len FROM namespace_sizes ORDER BY 1")
        ).all()
        live = conn.execute(
            text("SELECT sum(lex_len) FROM memories WHERE namespace = 'big'")
        ).scalar_one()
    assert [tuple(r) for r in stored] == [("big", 120, live)]  # small namespaces: none
    with store.engine.begin() as conn:  # what search reads is the stored row, not a count
        conn.execute(text("UPDATE namespace_sizes SET rows = 1000, lex_len = 4000"))
    put(store, "big", ["a new kettle story", "and one more"], now)  # not indexed yet

    def size(namespace: str) -> tuple[int, float] | None:
        retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())
        retriever.search(namespace, "kettle", as_of=now, record_access=False)
        return retriever.stats.size(namespace)

    def lengths(where: str) -> int:
        with store.engine.connect() as conn:
            return int(
                conn.execute(text(f"SELECT sum(lex_len) FROM memories WHERE {where}")).scalar_one()
            )

    new = lengths("namespace = 'big' AND NOT ann_indexed")
    assert new > 0 and size("big") == (1002, (4000 + new) / 1002)
    assert size("big2") == (30, lengths("namespace = 'big2'") / 30)  # counted whole
    assert size("bi") == (1, lengths("namespace = 'bi'") / 1)


def test_lexical_candidates_come_from_the_words_that_narrow_the_search() -> None:
    # 1,000 memories: a word in more than 50 of them is common.
    mixed = lexical_params([("budget", 200), ("samovar", 3), ("tbilisi", 7)], 1000, "ns")
    assert mixed["tsquery"] == "'samovar' | 'tbilisi'"
    assert mixed["scoped_tsquery"] == "'ns:samovar' | 'ns:tbilisi'"
    assert list(mixed["lexemes"]) == ["budget", "samovar", "tbilisi"]  # all count in BM25


def test_only_common_words_select_the_rows_with_the_two_rarest_together() -> None:
    common = lexical_params([("meeting", 300), ("budget", 200), ("risk", 150)], 1000, "ns")
    assert common["tsquery"] == "'budget' & 'risk'"
    assert common["scoped_tsquery"] == "'ns:budget' & 'ns:risk'"
    assert len(common["idfs"]) == 3


def test_a_lone_common_word_selects_rows_only_while_under_the_count_cap() -> None:
    # 10,000 memories: over 500 is common.
    assert lexical_params([("risk", DF_CAP - 1)], 10_000, "ns")["tsquery"] == "'risk'"
    capped = lexical_params([("risk", DF_CAP)], 10_000, "ns")
    assert capped["tsquery"] is None and capped["scoped_tsquery"] is None
    assert list(capped["lexemes"]) == ["risk"]  # it still counts in the BM25 of what is found
    assert lexical_params([("zebra", 0)], 100, "ns")["tsquery"] is None  # not in memory


def test_in_a_large_namespace_a_word_in_thousands_of_rows_selects_none() -> None:
    # 200,000 memories: 5% is 10,000 rows, but a word in DF_CAP rows or more (a live
    # count stops there: it may be in far more) selects none for ranking.
    big = lexical_params([("samovar", 40), ("budget", 5_000), ("risk", 999)], 200_000, "ns")
    assert big["tsquery"] == "'risk' | 'samovar'"
    assert list(big["lexemes"]) == ["samovar", "budget", "risk"]  # all count in BM25
    capped = lexical_params([("hire", DF_CAP), ("urgent", DF_CAP)], 35_000, "ns")
    assert capped["tsquery"] is None and capped["scoped_tsquery"] is None
    assert len(capped["idfs"]) == 2
    # Below 20,000 memories (5% < DF_CAP) the choice is as before.
    assert lexical_params([("risk", 900), ("kettle", 400)], 19_000, "ns")["tsquery"] == (
        "'kettle' | 'risk'"
    )
    # There two common words still select the rows that have both, while the rarer
    # bounds them.
    rare_pair = lexical_params([("contract", 800), ("note", 7_700)], 10_000, "ns")
    assert rare_pair["tsquery"] == "'contract' & 'note'"
    assert lexical_params([("contract", DF_CAP), ("note", 7_700)], 10_000, "ns")["tsquery"] is None
