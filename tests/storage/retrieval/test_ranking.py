"""One place per message: a long message's turn chunks count once, other kinds never merge."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.retrieval import Hit
from storage.retrieval._ranking import one_per_message

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def hit(memory_id: int, kind: str, session: str | None, *messages: str) -> Hit:
    return Hit(
        memory_id=memory_id,
        namespace="alice",
        kind=kind,
        content=f"memory {memory_id}",
        score=1.0 / memory_id,
        factors={},
        weights={},
        occurred_at=T0,
        created_at=T0,
        session_id=session,
        message_ids=messages,
        tier="fresh",
    )


def test_later_chunks_of_a_message_give_way_to_its_best_one() -> None:
    ranked = [
        hit(1, "turn", "s1", "m0"),  # best chunk of s1:m0
        hit(2, "fact", "s1", "m0"),  # a fact from the same message stays
        hit(3, "turn", "s1", "m0"),  # another chunk of s1:m0
        hit(4, "turn", "s2", "m0"),  # same message id, other session
        hit(5, "turn", "s1", "m1"),
        hit(6, "turn", None, "m0"),  # no session: nothing to group by
        hit(7, "turn", None, "m0"),
        hit(8, "episode", "s1", "m0", "m1"),
    ]

    assert [h.memory_id for h in one_per_message(ranked)] == [1, 2, 4, 5, 6, 7, 8]
