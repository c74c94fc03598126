"""Priming: what an assistant is told when a conversation starts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync

DAY = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def seed(store: Store) -> None:
    """Sessions over 100 days: old ones must fade out of priming."""
    topics = [
        (
            "Lisbon trip",
            "I need flights to Lisbon in March. Will you check TAP?",
            "I'll check TAP fares tomorrow.",
        ),
        (
            "dentist",
            "My dentist is Dr Ortega at Clinica Sol. I prefer mornings.",
            "Noted, mornings.",
        ),
        ("budget", "We decided to cap the launch budget at 40k EUR.", "Agreed, 40k cap."),
        ("running", "I run the Berlin half marathon in April. What shoes?", "Let's look at Asics."),
    ]
    for i, (title, first, reply) in enumerate(topics * 2):
        when = DAY - timedelta(days=[0, 2, 5, 9, 60, 75, 90, 100][i])
        add_session(
            store,
            f"s{i}",
            "alice",
            chat(when, first, reply, "Thanks, remember that.", "Sure."),
            title=title,
        )
        run_sync(store, when + timedelta(hours=1), window_hours=2, min_user_messages=1)


def make(store: Store, **settings: object) -> Retriever:
    return Retriever(store.engine, HashingEmbedder(384), RetrievalSettings(**settings))


def test_priming_has_recent_salient_episodes_threads_facts_and_text(store: Store) -> None:
    seed(store)

    priming = make(store).prime("alice", as_of=DAY + timedelta(hours=2), record_access=False)

    assert [e.session_id for e in priming.episodes] == ["s0", "s1", "s2"]
    assert all(e.salience > 0.3 for e in priming.episodes)
    assert 1 <= len(priming.open_threads) <= 5
    assert any("TAP" in t.context for t in priming.open_threads)
    assert 1 <= len(priming.facts) <= 10
    assert len({f.content for f in priming.facts}) == len(priming.facts)  # no repeats
    assert priming.formatted.startswith("What I remember about alice:")
    assert "Recent conversations:" in priming.formatted and "Still open:" in priming.formatted


def test_priming_limits_and_salience_floor_are_configurable(store: Store) -> None:
    seed(store)
    at = DAY + timedelta(hours=2)

    few = make(store, prime_episodes=1, prime_threads=1, prime_facts=2).prime("alice", as_of=at)
    strict = make(store, prime_min_salience=0.9).prime("alice", as_of=at, record_access=False)
    late = make(store).prime("alice", as_of=at + timedelta(days=120), record_access=False)

    assert (len(few.episodes), len(few.open_threads), len(few.facts)) == (1, 1, 2)
    assert [e.session_id for e in strict.episodes] == ["s0", "s1"]  # 0 and 2 days: > 0.9
    assert late.episodes == ()  # all faded below 0.3


def test_priming_with_a_first_message_brings_related_facts_and_entities(store: Store) -> None:
    seed(store)

    priming = make(store).prime(
        "alice", "Any news on my dentist at Clinica Sol?", as_of=DAY + timedelta(hours=2)
    )

    assert any("Ortega" in f.content for f in priming.facts[:3])
    assert "Ortega" in priming.entities or "Clinica Sol" in priming.entities
    with store.engine.connect() as conn:
        logged = conn.execute(
            text("SELECT namespace, memory_ids FROM memory_access_log WHERE context LIKE 'prime:%'")
        ).all()
    assert len(logged) == 1 and logged[0].namespace == "alice"
    assert len(logged[0].memory_ids) == len(priming.facts) + len(priming.episodes)


def test_priming_an_unknown_namespace_says_so(store: Store) -> None:
    priming = make(store).prime("nobody", "hello")
    assert priming.episodes == () and priming.facts == ()
    assert priming.formatted == "I don't remember anything about nobody yet."


def test_priming_text_labels_its_facts_and_closes_with_their_sources(store: Store) -> None:
    seed(store)

    priming = make(store).prime("alice", "dentist?", as_of=DAY + timedelta(hours=2))

    lines = priming.formatted.splitlines()
    known = lines.index("Things I know:")
    facts = lines[known + 1 : known + 1 + len(priming.facts)]
    assert facts == [f"- [Memory {n}] {f.content}" for n, f in enumerate(priming.facts, 1)]
    top = priming.facts[0]
    assert lines[-2] == "" and lines[-1].startswith(
        f"Sources: [Memory 1] memory {top.memory_id} (session {top.session_id}, messages "
    )
    assert lines[-1].count("; ") == len(priming.facts) - 1
