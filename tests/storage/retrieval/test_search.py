"""Search: scoping, plans, filters, scoring, access recording, bad input, public API."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from storage import retrieval
from storage.embedding import HashingEmbedder
from storage.kernel import scoring
from storage.kernel.errors import RetrievalError, StorageError
from storage.kernel.settings import RetrievalSettings
from storage.operations.access import fold_accesses
from storage.retrieval import Retriever, SearchOptions
from storage.retrieval.rank import candidate_vectors
from storage.server.engine import Store
from tasks.ann_index import refresh_ann_index
from tests.helpers import modules_after_import
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def retriever(store: Store, **settings: object) -> Retriever:
    return Retriever(
        store.engine,
        HashingEmbedder(384),
        RetrievalSettings(**settings),
        store.settings.tz,
    )


def test_public_api_is_pinned_and_imports_no_prefect() -> None:
    # What assistants use (Retriever, Hit, citations, budgets, what a question says about
    # time); each step of a search has its own face (candidates, rank, explain).
    assert retrieval.__all__ == [
        "ArchiveReader",
        "Citation",
        "CitationBook",
        "Context",
        "DOC_KIND",
        "DocSource",
        "Hit",
        "KINDS",
        "Priming",
        "RetrievalError",
        "Retriever",
        "SearchOptions",
        "TimeRange",
        "TimeWindow",
        "asks_about_now",
        "cite",
        "read_time",
        "render_citations",
        "search_within",
        "source_entries",
        "sources_line",
        "time_window",
    ]
    steps = ("candidates", "rank", "explain")
    assert all(hasattr(retrieval, step) for step in steps)  # imported with the face
    loaded = modules_after_import("storage.retrieval")
    assert [m for m in loaded if m.startswith("prefect")] == []


def test_namespace_isolation_including_full_text(store: Store) -> None:
    put(store, "alice", ["Alice's dentist appointment is on Tuesday at 9"], NOW)
    put(store, "bob", ["Bob's zeppelin hangar code is 4711", "zeppelin zeppelin zeppelin"], NOW)
    r = retriever(store)

    assert r.search("alice", "zeppelin hangar code", as_of=NOW, record_access=False) == []
    assert retriever(store, min_cosine=-1.0).search("alice", "zeppelin", as_of=NOW) != []
    assert all(h.namespace == "alice" for h in r.search("alice", "zeppelin", as_of=NOW))
    assert not any("zeppelin" in h.content for h in r.search("alice", "zeppelin", as_of=NOW))
    assert r.search("nobody", "zeppelin", as_of=NOW) == []


def test_top_k_is_complete_whatever_the_namespace_size_and_plan(store: Store) -> None:
    big = [f"note {i} about project atlas budget item {i % 37}" for i in range(1500)]
    put(store, "big", big, NOW - timedelta(days=3))
    put(
        store,
        "big",
        [f"decision {i}: ship atlas on day {i}" for i in range(12)],
        NOW,
        kind="decision",
    )
    put(store, "small", [f"small note {i} about atlas" for i in range(12)], NOW)
    flagged = refresh_ann_index(store.engine, min_rows=1000)
    assert flagged == {"big": 1512}
    r = retriever(store, min_cosine=-1.0)  # every dense candidate counts, related or not

    assert "ix_memories_hnsw" in r.explain_plan("big", "atlas budget")
    small_plan = r.explain_plan("small", "atlas")
    assert "ix_memories_exact" in small_plan and "ix_memories_hnsw" not in small_plan
    assert len(r.search("big", "atlas budget", limit=10, as_of=NOW)) == 10
    assert len(r.search("small", "atlas", limit=10, as_of=NOW)) == 10
    # A filter that leaves 12 of 1,512 indexed rows must still give 10 (exact fallback).
    decisions = r.search(
        "big", "budget overview", limit=10, as_of=NOW, options=SearchOptions(kinds=["decision"])
    )
    assert len(decisions) == 10 and {h.kind for h in decisions} == {"decision"}


def test_time_ranges_and_kinds(store: Store) -> None:
    put(store, "a", ["flight booked to Rome today"], NOW - timedelta(hours=2))
    put(store, "a", ["flight booked to Oslo last week"], NOW - timedelta(days=6))
    put(store, "a", ["flight booked to Lima two months ago"], NOW - timedelta(days=60))
    put(store, "a", ["flight turn note"], NOW - timedelta(hours=1), kind="turn")
    r = retriever(store)

    def places(time_range: Any = None, kinds: list[str] | None = None) -> set[str]:
        hits = r.search(
            "a",
            "flight booked",
            as_of=NOW,
            record_access=False,
            options=SearchOptions(time_range=time_range, kinds=kinds),
        )
        return {h.content.split()[3] for h in hits if h.kind == "fact"} | {
            "turn" for h in hits if h.kind == "turn"
        }

    assert places("today") == {"Rome", "turn"}
    assert places("recent") == {"Rome", "Oslo", "turn"}
    assert places("all") == {"Rome", "Oslo", "Lima", "turn"}
    assert places((NOW - timedelta(days=70), NOW - timedelta(days=30))) == {"Lima"}
    assert places(kinds=["turn"]) == {"turn"}
    assert places("week") <= {"Rome", "Oslo", "turn"} and "Rome" in places("week")
    assert "Lima" not in places("month")


def test_scores_are_relevance_scaled_by_the_weighted_factors(store: Store) -> None:
    put(store, "a", ["the garage door code is 1234"], NOW - timedelta(days=30), importance=0.9)
    put(store, "a", ["the new garage door code is 9876"], NOW - timedelta(days=3))
    r = retriever(store)

    plain = r.search("a", "garage door code", as_of=NOW, record_access=False)
    dated = r.search("a", "garage door code from last month", as_of=NOW, record_access=False)

    for hit in (*plain, *dated):
        w, f = hit.weights, hit.factors
        relevance_weight = sum(w[n] for n in scoring.RELEVANCE)
        relevance = sum(w[n] * f[n] for n in scoring.RELEVANCE) / relevance_weight
        boosts = [n for n in scoring.FACTORS if n not in scoring.RELEVANCE]
        expected = (
            relevance
            * (relevance_weight + sum(w[n] * f[n] for n in boosts))
            / (relevance_weight + sum(w[n] for n in boosts))
        )
        assert hit.score == pytest.approx(expected)
    old = next(h for h in dated if h.content.endswith("1234"))
    assert set(old.factors) >= {"semantic", "lexical", "recency", "importance", "window"}
    assert old.factors["recency"] == pytest.approx(0.5)
    assert old.factors["importance"] == pytest.approx(0.9)
    # "last month" is October: the memory of 21 October is inside, that of 17 November
    # 16.5 days past its end; the window counts only for the question that names it.
    assert old.factors["window"] == 1.0 and old.weights["window"] == 0.5
    new = next(h for h in dated if h.content.endswith("9876"))
    assert new.factors["window"] == pytest.approx(1 - 16.5 / 31)
    assert all(h.weights["window"] == 0 and h.window is None for h in plain)
    assert "1*semantic" in old.explain() and "0.5*window(1.000)" in old.explain()
    assert 'window "last month": 2026-10-01 to 2026-10-31' in old.explain()


def test_time_counts_only_where_the_question_asks_for_it(store: Store) -> None:
    old, new = "passport renewal appointment at the consulate on Main Street", "booked it"
    put(store, "a", [old], NOW - timedelta(days=200), session_id="s1")
    put(store, "a", [f"{old}, {new}"], NOW - timedelta(days=1), session_id="s2")
    put(store, "a", ["lunch with Sam"], NOW)
    r = retriever(store)

    def order(query: str) -> list[str]:
        hits = r.search("a", query, as_of=NOW, record_access=False)
        return [h.content.split()[-1] for h in hits]

    # Relevance alone: the older, shorter statement matches the question best.
    assert order("passport renewal appointment consulate Main Street")[:2] == ["Street", "it"]
    # Asked about now, the newer statement of the same thing comes first.
    assert order("passport renewal appointment consulate Main Street now")[:2] == ["it", "Street"]
    assert order("lunch with Sam")[0] == "Sam"


def test_presets_weigh_different_factors(store: Store) -> None:
    put(store, "a", ["tax form deadline reminder"], NOW - timedelta(days=40), access_count=80)
    put(store, "a", ["tax form deadline reminder!"], NOW - timedelta(days=40), importance=1.0)
    archivist, librarian = retriever(store), retriever(store, preset="librarian")

    top_a = archivist.search("a", "tax form deadline", as_of=NOW, record_access=False)[0]
    top_l = librarian.search("a", "tax form deadline", as_of=NOW, record_access=False)[0]

    assert top_a.content.endswith("!")  # importance counts for archivist
    assert not top_l.content.endswith("!")  # frequency counts for librarian


def test_access_is_recorded_in_one_statement(store: Store) -> None:
    put(store, "a", [f"recipe {i} with lemon" for i in range(5)], NOW)
    r = retriever(store)
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(store.engine, "before_cursor_execute", listener)
    try:
        hits = r.search("a", "lemon recipe", limit=3, as_of=NOW)
    finally:
        event.remove(store.engine, "before_cursor_execute", listener)
    r.search("a", "lemon recipe", limit=3, as_of=NOW, record_access=False)

    writes = [s for s in statements if "memories SET" in s or "INTO memory_access" in s]
    assert len(writes) == 1
    assert "UPDATE memories" not in writes[0]  # the wide rows stay as they are until a fold
    with store.engine.connect() as conn:
        counts = {i: n for i, n in conn.execute(text("SELECT id, access_count FROM memories"))}
        pending = conn.execute(
            text("SELECT memory_id, namespace, hits, last_accessed_at FROM memory_access_pending")
        ).all()
        log = conn.execute(
            text("SELECT namespace, memory_ids, context, accessed_at FROM memory_access_log")
        ).all()
    returned = {h.memory_id for h in hits}
    assert set(counts.values()) == {0}
    assert {row.memory_id for row in pending} == returned
    assert {(row.namespace, row.hits, row.last_accessed_at) for row in pending} == {("a", 1, NOW)}
    # One log row for the search: its hits in rank order.
    assert [tuple(row) for row in log] == [
        ("a", [h.memory_id for h in hits], "search: lemon recipe", NOW)
    ]


class QueryRecording(HashingEmbedder):
    """The offline embedder, noting which texts reach which of its two encoders."""

    def __init__(self) -> None:
        super().__init__(384)
        self.texts: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return super().embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed([text])[0]


def test_queries_go_through_the_query_encoder(store: Store) -> None:
    put(store, "a", ["lemon tart recipe", "garage tyres before winter"], NOW)
    embedder = QueryRecording()
    r = Retriever(store.engine, embedder, RetrievalSettings(), store.settings.tz)

    assert r.search("a", "lemon recipe", as_of=NOW)[0].content == "lemon tart recipe"
    r.prime("a", "winter tyres?", as_of=NOW)
    r.explain_plan("a", "tart", limit=5)

    assert embedder.queries == ["lemon recipe", "winter tyres?", "tart"]
    assert embedder.texts == []  # the memories' encoder is left to what writes them


def test_pending_accesses_score_as_folded_ones(store: Store) -> None:
    put(store, "a", ["tax form deadline reminder"], NOW - timedelta(days=40))
    r = retriever(store, preset="librarian")
    for day in range(3):
        r.search("a", "tax form deadline", as_of=NOW + timedelta(days=day))
    later = NOW + timedelta(days=10)

    def top() -> dict[str, float]:
        return r.search("a", "tax form deadline", as_of=later, record_access=False)[0].factors

    unfolded = top()
    with Session(store.engine) as session, session.begin():
        folded = fold_accesses(session)
    assert (folded.rows, folded.memories, folded.accesses) == (1, 1, 3)
    assert top() == unfolded
    assert unfolded["frequency"] == pytest.approx(scoring.frequency(3))
    # the last access (as_of NOW + 2 days) is 8 days before ``later``
    assert unfolded["salience"] == pytest.approx(scoring.salience(3, 8, 30))
    with store.engine.connect() as conn:
        row = conn.execute(text("SELECT access_count, last_accessed_at FROM memories")).one()
        assert tuple(row) == (3, NOW + timedelta(days=2))
        assert conn.execute(text("SELECT count(*) FROM memory_access_pending")).scalar() == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "empty query"),
        ({"query": "   "}, "empty query"),
        ({"limit": 0}, "limit 0 out of range"),
        ({"limit": 101}, "limit 101 out of range"),
        ({"options": SearchOptions(kinds=["memes"])}, "unknown kind"),
        ({"namespace": "a b"}, "bad namespace"),
        ({"namespace": "bob\n"}, "bad namespace"),  # `$` alone would accept the newline
        ({"query": "dentist\x00"}, "query holds a NUL character"),
        ({"query": "dentist \udc80"}, "query holds a lone surrogate"),
        ({"options": SearchOptions(time_range=(NOW, NOW - timedelta(days=1)))}, "reversed"),
        ({"options": SearchOptions(time_range="fortnight")}, "unknown time range"),  # type: ignore[arg-type]
        ({"options": SearchOptions(weights={"semantic": -1})}, "weights must be numbers"),
        ({"options": SearchOptions(weights={"smell": 1})}, "unknown weight"),
        ({"as_of": datetime(2026, 1, 1)}, "needs a UTC offset"),
    ],
)
def test_bad_input_is_a_clear_error(store: Store, kwargs: dict[str, object], message: str) -> None:
    args = {"namespace": "a", "query": "hello"} | kwargs
    with pytest.raises(RetrievalError, match=message):
        retriever(store).search(args.pop("namespace"), args.pop("query"), **args)  # type: ignore[arg-type]


def test_priming_refuses_a_namespace_with_a_trailing_newline(store: Store) -> None:
    put(store, "bob", ["Bob's zeppelin hangar code is 4711"], NOW)
    with pytest.raises(RetrievalError, match="bad namespace"):
        retriever(store).prime("bob\n", as_of=NOW)


def test_database_failures_are_storage_errors_not_bad_requests(store: Store) -> None:
    put(store, "a", ["something"], NOW)
    r = retriever(store)
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE memories RENAME COLUMN lex_len TO lex_len_gone"))
    with pytest.raises(StorageError, match="search in namespace 'a' failed") as failed:
        r.search("a", "something", as_of=NOW)
    assert not isinstance(failed.value, RetrievalError)  # a server's failure, not bad input


def test_restatements_come_from_the_searched_namespace_only(store: Store) -> None:
    old = "I moved to Berlin, the flat is near the river"
    [berlin] = put(store, "alice", [old], NOW - timedelta(days=70), session_id="s1")
    [paris] = put(store, "alice.b", [f"{old} and the park"], NOW, session_id="s2")
    r = retriever(store)

    # The store's role bypasses the policies: only the query's own filter keeps alice.b out.
    with store.engine.connect() as conn:
        found = candidate_vectors(conn, "alice", [berlin, paris], prepare=False)
    [hit] = r.search("alice", "which flat do I live in now?", as_of=NOW, record_access=False)

    assert set(found) == {berlin} and found[berlin].shape == (384,)
    assert hit.memory_id == berlin and hit.restated_by is None and hit.weights["supersede"]
