"""Turns found in context (the ``context`` rule): the turns next to a strong turn hit come
up with it, within its session and the search's time range; without the rule they stay
where relevance puts them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.scoring import resolve_weights
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
QUESTION = "what telescope did I buy for the moon"
# One conversation: the statement the question is about, worded unlike it, between turns.
TALK = [
    "Happy birthday wishes are sorted for tomorrow",
    "Alfie turns seven and I got him a small refractor from the science shop",
    "A telescope for the moon is a lovely present for a boy of seven",
    "The weather should be clear enough on Saturday night",
]
# Other sessions that share the question's words, each as relevant as the reply above.
OTHERS = [f"the moon was bright over the harbour on night {i}" for i in range(12)]


def _put_talk(store: Store, session: str, start: datetime) -> list[int]:
    """The conversation's turns (messages m0..m3), a minute apart."""
    spacing = timedelta(minutes=1)
    return put(store, "alice", TALK, start, kind="turn", session_id=session, spacing=spacing)


def _search(
    store: Store, weights: dict[str, float], limit: int = 5, **options: object
) -> list[str]:
    r = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings(), store.settings.tz)
    hits = r.search(
        "alice",
        QUESTION,
        as_of=NOW,
        limit=limit,
        record_access=False,
        options=SearchOptions(weights=weights, **options),  # type: ignore[arg-type]
    )
    return [h.content for h in hits]


def test_the_turn_before_a_strong_hit_comes_up_with_it(store: Store) -> None:
    _put_talk(store, "s-birthday", NOW - timedelta(days=40))
    for i, said in enumerate(OTHERS):
        put(
            store,
            "alice",
            [said],
            NOW - timedelta(days=i + 1),
            kind="turn",
            session_id=f"s-other-{i}",
        )

    plain = _search(store, {"semantic": 1.0})
    assert plain[0] == TALK[2]
    assert TALK[1] not in plain
    with_context = _search(store, resolve_weights("archivist"))
    assert with_context[0] == TALK[2]
    assert TALK[1] in with_context
    # The first hits of a longer search are the same.
    longer = _search(store, resolve_weights("archivist"), limit=15)
    assert longer[:5] == with_context
    assert len(longer) == 15


def test_neighbours_respect_the_session_and_the_time_range(store: Store) -> None:
    _put_talk(store, "s-birthday", NOW - timedelta(days=40))
    put(
        store,
        "alice",
        ["Alfie and the refractor from another talk"],
        NOW - timedelta(days=40),
        kind="turn",
        session_id="s-elsewhere",
    )
    weights = resolve_weights("archivist")
    found = _search(store, weights)
    assert "Alfie and the refractor from another talk" not in found[:3]
    # A range ending before the statement: its turn is no neighbour then.
    cut = NOW - timedelta(days=40) + timedelta(seconds=90)
    ranged = _search(store, weights, time_range=(cut, NOW))
    assert TALK[1] not in ranged
    assert TALK[3] in ranged  # the next turn, inside it, still comes up


def test_neighbours_are_the_namespaces_own(store: Store) -> None:
    """A look-alike namespace's turn in a session of the same id, right before the best
    hit, is no neighbour of it: the neighbours are read within the search's namespace."""
    start = NOW - timedelta(days=40)
    _put_talk(store, "s-birthday", start)
    for ns in ("alice2", "alic"):
        [other] = put(store, ns, [f"{ns} secret refractor plan"], start, kind="turn")
        with store.engine.begin() as conn:  # in alice's session, between TALK[1] and TALK[2]
            conn.execute(
                text(
                    "UPDATE memories SET session_id = 's-birthday', occurred_at = :at "
                    "WHERE id = :id"
                ),
                {"at": start + timedelta(seconds=90), "id": other},
            )
    found = _search(store, resolve_weights("archivist"), limit=10)
    assert TALK[1] in found
    assert not [c for c in found if "secret" in c]
