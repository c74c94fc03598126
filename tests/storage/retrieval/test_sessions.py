"""Turns ranked within their session (the ``session`` rule): the session a strong summary or
turn hit points to brings up its turns nearest the question, within the search's
namespace, kinds and time range; without the rule they stay where relevance puts them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.embedding import HashingEmbedder
from storage.kernel.scoring import resolve_weights
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Hit, Retriever, SearchOptions
from storage.server.engine import Store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
WHEN = NOW - timedelta(days=200)
QUESTION = "which campsite did we book for the lake trip"
SUMMARY = "Lake trip: we looked for a campsite to book for the lake trip in August"
# The session's turns: the evidence, worded unlike the question, between small talk.
TURNS = [
    "Can you help me plan something for August?",
    "Sure, what do you have in mind?",
    "Pine Cove campground by the lakeside, pitch 12",
    "Great, bring the canoe and the blue tent",
    "Thanks, talk soon",
]
EVIDENCE = TURNS[2]
# Other sessions, each sharing the question's words more than the evidence does.
OTHERS = [f"a windy lake on day {i}" for i in range(12)]
# Look-alike namespaces' turns of a session with the same id, nearer the question still.
LOOK_ALIKES = ("alice2", "alice.b")
FOREIGN = "we did book the campsite for the lake trip, which campsite was it"


def _put_session(store: Store, namespace: str = "alice", at: datetime = WHEN) -> list[int]:
    """The session's summary, then its turns (messages m0..m4), a minute apart."""
    put(
        store, namespace, [SUMMARY], at + timedelta(minutes=10), kind="episode", session_id="s-lake"
    )
    spacing = timedelta(minutes=1)
    return put(store, namespace, TURNS, at, kind="turn", session_id="s-lake", spacing=spacing)


def _put_others(store: Store) -> None:
    for i, said in enumerate(OTHERS):
        put(store, "alice", [said], NOW - timedelta(days=i + 1), kind="turn", session_id=f"o-{i}")


def _search(
    store: Store, weights: dict[str, float], limit: int = 5, **options: object
) -> list[Hit]:
    r = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings(), store.settings.tz)
    return r.search(
        "alice",
        QUESTION,
        as_of=NOW,
        limit=limit,
        record_access=False,
        options=SearchOptions(weights=weights, **options),  # type: ignore[arg-type]
    )


def _contents(hits: list[Hit]) -> list[str]:
    return [h.content for h in hits]


def test_the_session_a_summary_points_to_brings_its_best_turn(store: Store) -> None:
    _put_session(store)
    _put_others(store)
    archivist = resolve_weights("archivist")

    plain = _contents(_search(store, archivist | {"session": 0.0}))
    assert plain[0] == SUMMARY
    assert EVIDENCE not in plain
    found = _search(store, archivist)
    assert found[0].content == SUMMARY
    assert EVIDENCE in _contents(found)
    lifted = next(h for h in found if h.content == EVIDENCE)
    assert 0 < lifted.factors["session"] <= archivist["session"]
    assert lifted.score <= archivist["session"] * found[0].score
    assert "Thanks, talk soon" not in _contents(found)  # not among the session's best turns
    # The first hits of a longer search are the same.
    longer = _search(store, archivist, limit=15)
    assert [h.memory_id for h in longer[:5]] == [h.memory_id for h in found]


def test_session_turns_come_from_the_search_namespace_only(store: Store) -> None:
    _put_session(store)
    _put_others(store)
    for namespace in LOOK_ALIKES:  # the same session id, and a turn nearer the question
        put(store, namespace, [FOREIGN, SUMMARY], WHEN, kind="turn", session_id="s-lake")

    found = _search(store, resolve_weights("archivist"), limit=30)

    assert {h.namespace for h in found} == {"alice"}
    assert FOREIGN not in _contents(found)
    assert EVIDENCE in _contents(found)[:5]


def test_session_turns_respect_the_time_range_and_the_kinds(store: Store) -> None:
    _put_session(store)
    _put_others(store)
    weights = resolve_weights("archivist")

    # A range that starts after the evidence was said: the summary still points, but the
    # turn is out of range.
    cut = WHEN + timedelta(minutes=3)
    ranged = _contents(_search(store, weights, time_range=(cut, NOW)))
    assert SUMMARY in ranged
    assert EVIDENCE not in ranged
    # Asked for summaries only: no turn comes up.
    episodes = _search(store, weights, kinds=["episode"])
    assert episodes and {h.kind for h in episodes} == {"episode"}
