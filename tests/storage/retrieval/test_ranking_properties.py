"""Ranking properties over a synthetic store: limit never changes the order, newer
statements win ties, and a query that matches nothing gets nothing."""

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


def test_a_later_statement_comes_before_the_one_it_supersedes(store: Store) -> None:
    put(store, "alice", ["I moved to Berlin, the flat is near the river"], NOW - timedelta(days=70))
    put(store, "alice", ["We moved to Paris, the flat is near the park"], NOW - timedelta(days=3))
    put(store, "alice", ["The quarterly budget review is on Friday"], NOW - timedelta(days=1))
    hits = Retriever(store.engine, HashingEmbedder(384)).search(
        "alice", "where did I move, which flat?", as_of=NOW, record_access=False
    )
    assert [h.content.split(",")[0] for h in hits[:2]] == ["We moved to Paris", "I moved to Berlin"]
