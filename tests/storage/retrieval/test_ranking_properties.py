"""Ranking properties over a synthetic store: limit never changes the order, and asked
about now, a newer statement comes before the older one it supersedes."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.retrieval import Retriever
from storage.server.engine import Store
from storage.sessions import record_messages, record_session
from tasks.samples import generate_bulk
from tests.helpers import run_sync
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
_NAMESPACES = text("SELECT DISTINCT namespace FROM memories")
_WORDS = text(
    "SELECT DISTINCT w FROM memories, regexp_split_to_table(lower(content), '[^a-z]+') AS w "
    "WHERE namespace = :namespace AND length(w) >= 4 "
    "AND to_tsvector('english', w) <> CAST('' AS tsvector) ORDER BY w"
)


@pytest.fixture
def synced(store: Store) -> Store:
    """40 synthetic sessions of one namespace over 200 days, synced the daily way."""
    start = NOW - timedelta(days=200)
    bulk = generate_bulk(40, 12, start=start, end=NOW - timedelta(hours=2), namespaces=1)
    with Session(store.engine) as session, session.begin():
        for record, messages in bulk:
            record_session(session, record)
            record_messages(session, record.id, messages)
    run_sync(store, NOW, window_hours=24 * 210, min_user_messages=1)
    return store


def test_the_first_k_hits_are_the_first_k_of_fifty(synced: Store) -> None:
    with Session(synced.engine) as session:
        (namespace,) = session.execute(_NAMESPACES).scalars().all()
        words = session.execute(_WORDS, {"namespace": namespace}).scalars().all()
    retriever = Retriever(synced.engine, HashingEmbedder(384))
    rng = random.Random(7)
    long_lists = 0
    for _ in range(25):
        query = " ".join(rng.sample(words, rng.randint(1, 4)))
        fifty = retriever.search(namespace, query, limit=50, as_of=NOW, record_access=False)
        long_lists += len(fifty) > 25
        for k in (1, 3, 10, 25):
            top = retriever.search(namespace, query, limit=k, as_of=NOW, record_access=False)
            assert [h.memory_id for h in top] == [h.memory_id for h in fifty[:k]], (query, k)
    assert long_lists >= 15  # most queries rank more candidates than the largest k


def test_asked_about_now_a_later_statement_comes_before_the_one_it_supersedes(
    store: Store,
) -> None:
    berlin, paris = "I moved to Berlin, the flat is near the river", "We moved to Paris, the flat"
    put(store, "alice", [berlin], NOW - timedelta(days=70), session_id="s1")
    put(store, "alice", [f"{paris} is near the park"], NOW - timedelta(days=3), session_id="s2")
    put(store, "alice", ["The quarterly budget review is on Friday"], NOW - timedelta(days=1))
    retriever = Retriever(store.engine, HashingEmbedder(384))

    for question in (
        "where do I live now, which flat?",
        "which flat have I moved to these days?",
        "do I still live in the flat I moved to?",
    ):
        hits = retriever.search("alice", question, as_of=NOW, record_access=False)
        firsts = [h.content.split(",")[0] for h in hits[:2]]
        assert firsts == ["We moved to Paris", "I moved to Berlin"], question
        assert hits[1].restated_by == hits[0].memory_id
        assert f"placed after newer memory {hits[0].memory_id}" in hits[1].explain()
