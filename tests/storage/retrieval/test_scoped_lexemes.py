"""Lexemes scoped to their namespace (migration 0018): a lexical lookup reads the postings of
its own namespace only, under the store's role and under the serving role alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, TextClause, text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings, Settings
from storage.retrieval import Retriever
from storage.retrieval.candidates import (
    CANDIDATES,
    CHUNK_TERM_STATS,
    DF_CAP,
    TERM_STATS,
    Request,
    StatsCache,
    scoped_term,
    search_params,
    tsquery_term,
)
from storage.server.engine import Store
from storage.server.scoped import open_serving_engine
from tests.helpers import scoped
from tests.storage.memory_factory import put
from tests.tasks.documents.test_ingest import ingest, write_samples

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
# "alice" has 2 memories about the dentist; its look-alikes have many more.
CROWD = {"alice": 2, "alice2": 30, "Alice": 30, "bob": 40}
ROLES = ("owner", "serving")


def _fill(store: Store) -> None:
    for ns, count in CROWD.items():
        put(store, ns, [f"the dentist visit number {i} of {ns}" for i in range(count)], AT)


def _transaction(role: str, store: Store, settings: Settings) -> AbstractContextManager[Connection]:
    """A transaction of the owner, or of the serving role scoped to alice by a key."""
    if role == "owner":
        return store.engine.begin()
    return scoped(open_serving_engine(settings), store, "alice")


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _analyze(conn: Connection, statement: TextClause, params: dict[str, Any]) -> list[dict]:
    explained = text("EXPLAIN (ANALYZE, FORMAT JSON) " + statement.text)
    found = conn.execute(explained, params).scalar_one()
    plan = (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]
    return list(_nodes(plan))


def _lookups(nodes: list[dict]) -> list[tuple[str, int]]:
    """(index, rows read in all its loops) of each bitmap scan of a full-text index."""
    return [
        (n["Index Name"], round(n["Actual Rows"] * n["Actual Loops"]))
        for n in nodes
        if n["Node Type"] == "Bitmap Index Scan" and n["Index Name"].endswith("tsv")
    ]


def test_each_row_has_its_lexemes_prefixed_with_its_namespace(store: Store):
    _fill(store)
    with store.engine.connect() as conn:
        wrong = conn.execute(
            text(
                "SELECT count(*) FROM memories WHERE tsvector_to_array(scoped_tsv) <> ARRAY("
                "SELECT namespace || ':' || l FROM unnest(tsvector_to_array(tsv)) l)"
            )
        ).scalar_one()
        alice = conn.execute(
            text(
                "SELECT DISTINCT tsvector_to_array(scoped_tsv) FROM memories WHERE id IN ("
                "SELECT min(id) FROM memories WHERE namespace = 'alice')"
            )
        ).scalar_one()
    assert wrong == 0
    assert "alice:dentist" in alice and all(lexeme.startswith("alice:") for lexeme in alice)


@pytest.mark.parametrize("role", ROLES)
def test_counting_a_word_reads_only_its_namespace_postings(
    role: str, store: Store, settings: Settings
):
    _fill(store)
    params = {
        "namespace": "alice",
        "with_size": True,
        "lexemes": ["dentist"],
        "terms": [scoped_term("alice", "dentist")],
        "plain": [tsquery_term("dentist")],
        "df_cap": DF_CAP,
    }
    with _transaction(role, store, settings) as conn:
        counted = {r.lexeme: r.df for r in conn.execute(TERM_STATS, params)}
        nodes = _analyze(conn, TERM_STATS, params)
    assert counted["dentist"] == 2
    # Two postings read, not the 102 of the look-alikes, and no namespace btree ANDed in.
    assert _lookups(nodes) == [("ix_memories_scoped_tsv", 2)]
    assert not any(n["Node Type"] == "BitmapAnd" for n in nodes)


@pytest.mark.parametrize("role", ROLES)
def test_the_lexical_candidates_come_from_the_namespace_postings(
    role: str, store: Store, settings: Settings
):
    _fill(store)
    embedder = HashingEmbedder(384)
    request = Request("alice", "dentist", embedder.embed(["dentist"])[0], 10)
    with _transaction(role, store, settings) as conn:
        found = search_params(conn, request, RetrievalSettings(), StatsCache(0), "english")
        assert found is not None
        params = found[0] | {"ann_ids": [], "ann_dists": []}
        rows = conn.execute(CANDIDATES, params).all()
        nodes = _analyze(conn, CANDIDATES, params)
    assert sorted(r.namespace for r in rows) == ["alice", "alice"]
    assert _lookups(nodes) == [("ix_memories_scoped_tsv", 2)]
    assert not any(n["Node Type"] == "BitmapAnd" for n in nodes)


def test_chunks_are_counted_from_their_namespace_postings(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))  # namespace "acme"
    ingest(store, str(tmp_path), ns="acme2")
    params = {
        "namespace": "acme",
        "with_size": False,
        "lexemes": ["chain"],
        "terms": [scoped_term("acme", "chain")],
        "plain": [tsquery_term("chain")],
        "df_cap": DF_CAP,
    }
    with store.engine.begin() as conn:
        alone = conn.execute(CHUNK_TERM_STATS, params).all()[1].df
        # So few chunks are read whole; without that, the index must answer.
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        nodes = _analyze(conn, CHUNK_TERM_STATS, params)
        both = conn.execute(
            text("SELECT count(*) FROM document_chunks WHERE tsv @@ 'chain'::tsquery")
        ).scalar_one()
    assert alone > 0 and both == 2 * alone
    assert _lookups(nodes) == [("ix_document_chunks_scoped_tsv", alone)]


def test_a_word_too_long_to_scope_is_stored_and_searched_without_error(store: Store):
    namespace = "n" * 100  # the longest namespace: a 1,990-byte word no longer fits
    word = "x" * 1990
    put(store, namespace, [f"remember {word} for later", "the dentist is on Friday"], AT)
    with store.engine.connect() as conn:
        lexemes = conn.execute(
            text(
                "SELECT tsvector_to_array(tsv), tsvector_to_array(scoped_tsv) FROM memories "
                "WHERE content LIKE 'remember%'"
            )
        ).one()
    assert word in lexemes[0] and f"{namespace}:rememb" in lexemes[1]
    assert all(len(lexeme) < 2000 for lexeme in lexemes[1])
    assert scoped_term(namespace, word) is None
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())
    hits = retriever.search(namespace, f"{word} remember", as_of=AT, record_access=False)
    assert hits and hits[0].content.startswith("remember")  # found through "rememb"


@pytest.mark.parametrize("lexeme", ["o'brien", "back\\slash", "it's:a\\'mix"])
def test_a_quoted_term_matches_exactly_its_lexeme(store: Store, lexeme: str):
    with store.engine.connect() as conn:
        matched = conn.execute(
            text("SELECT array_to_tsvector(ARRAY[:lexeme]) @@ CAST(:term AS tsquery)"),
            {"lexeme": lexeme, "term": tsquery_term(lexeme)},
        ).scalar_one()
    assert matched is True
