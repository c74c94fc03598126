"""Each large namespace's memories have an HNSW index of their own (migration 0019), and
one of their memories but turns: a walk reads one namespace's graph, look-alike namespaces
included, a walk for kinds without turns the second one, and forgetting a namespace drops
them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.operations.ann import kinds_index, namespace_index
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from tasks.ann_index import refresh_ann_index
from tasks.files import open_memory_root
from tasks.privacy import forget
from tests.storage.memory_factory import put
from tests.storage.schema_steps import migrate
from tests.tasks.aging.helpers import local_cold

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
OWN = text(
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
    "AND indexname LIKE 'ix\\_memories\\_hnsw%' ORDER BY 1"
)

KINDS = text(
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
    "AND indexname LIKE 'ix\\_memories\\_kinds%' ORDER BY 1"
)
FACTS = SearchOptions(kinds=["fact"])


def _fill(store: Store) -> None:
    old = NOW - timedelta(days=3)
    put(store, "big", [f"note {i} about atlas budget item {i % 37}" for i in range(1100)], old)
    put(store, "big2", [f"note {i} about atlas ledger line {i % 29}" for i in range(1050)], old)
    put(store, "small", [f"small note {i} about atlas" for i in range(12)], NOW)
    assert refresh_ann_index(store.engine, min_rows=1000) == {"big": 1100, "big2": 1050}


def _indexes(store: Store) -> dict[str, str]:
    with store.engine.connect() as conn:
        return {str(name): str(definition) for name, definition in conn.execute(OWN)}


def _retriever(store: Store) -> Retriever:
    settings = RetrievalSettings(min_cosine=-1.0)
    return Retriever(store.engine, HashingEmbedder(384), settings, store.settings.tz)


def test_each_large_namespace_walks_an_index_of_its_own(store: Store) -> None:
    _fill(store)
    big, big2 = namespace_index("big"), namespace_index("big2")

    indexes = _indexes(store)
    assert set(indexes) == {big, big2}
    assert "(namespace)::text = 'big'::text" in indexes[big]
    assert "(namespace)::text = 'big2'::text" in indexes[big2]
    r = _retriever(store)
    plan = r.explain_plan("big", "atlas ledger")
    assert big in plan and big2 not in plan
    plan = r.explain_plan("big2", "atlas budget")
    assert big2 in plan and big not in plan
    assert "hnsw" not in r.explain_plan("small", "atlas")
    hits = r.search("big", "atlas ledger line", limit=10, as_of=NOW, record_access=False)
    assert len(hits) == 10 and {h.namespace for h in hits} == {"big"}


def test_a_walk_for_kinds_without_turns_reads_the_namespaces_index_of_them(
    store: Store,
) -> None:
    old = NOW - timedelta(days=3)
    turns = [f"turn {i} about atlas budget item {i % 37}" for i in range(1000)]
    put(store, "big", turns, old, kind="turn", session_id="s-big")
    put(store, "big", [f"fact {i} about atlas budget item {i % 37}" for i in range(60)], old)
    put(store, "big2", [f"fact {i} about atlas budget item {i % 37}" for i in range(1050)], old)
    refresh_ann_index(store.engine, min_rows=1000)
    with store.engine.connect() as conn:
        found = conn.execute(KINDS).all()
    assert [name for name, _ in found] == sorted([kinds_index("big"), kinds_index("big2")])
    definition = {str(name): str(sql) for name, sql in found}[kinds_index("big")]
    assert "(namespace)::text = 'big'::text" in definition and "<> 'turn'" in definition
    r = _retriever(store)

    for kinds in (["fact"], ["episode", "preference"]):
        plan = r.explain_plan("big", "atlas budget", kinds=kinds)
        assert kinds_index("big") in plan and namespace_index("big") not in plan
        assert kinds_index("big2") not in plan
    every: list[list[str] | None] = [None, ["turn"], ["turn", "fact"]]
    for walked in every:
        plan = r.explain_plan("big", "atlas budget", kinds=walked)
        assert namespace_index("big") in plan and kinds_index("big") not in plan
    facts = r.search("big", "atlas budget item 7", as_of=NOW, record_access=False, options=FACTS)
    assert len(facts) == 10 and {(h.namespace, h.kind) for h in facts} == {("big", "fact")}
    assert facts[0].content.endswith("item 7")


def test_forgetting_a_namespace_drops_its_index(store: Store, tmp_path: Path) -> None:
    _fill(store)
    root = open_memory_root(store.settings)
    forget(store.engine, local_cold(tmp_path), root, "big", actor="test")
    assert set(_indexes(store)) == {namespace_index("big2")}
    with store.engine.connect() as conn:
        assert [name for name, _ in conn.execute(KINDS)] == [kinds_index("big2")]
    hits = _retriever(store).search("big2", "atlas ledger", as_of=NOW, record_access=False)
    assert len(hits) == 10


def test_migration_0019_gives_each_indexed_namespace_its_index_and_back(store: Store) -> None:
    _fill(store)
    r = _retriever(store)
    before = [h.memory_id for h in r.search("big2", "atlas ledger line 7", as_of=NOW)]

    migrate(store, "0018")
    shared = _indexes(store)
    assert list(shared) == ["ix_memories_hnsw"]
    assert shared["ix_memories_hnsw"].endswith("WHERE ann_indexed")

    migrate(store, "head")
    assert set(_indexes(store)) == {namespace_index("big"), namespace_index("big2")}
    assert [h.memory_id for h in r.search("big2", "atlas ledger line 7", as_of=NOW)] == before
