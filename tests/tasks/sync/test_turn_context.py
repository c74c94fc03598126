"""Turns embedded with their context (``embedding.turn_context``): the vector is made from
the turn, its session's title and date and the turn it answers; the stored text is the
message; ``archivist reembed`` makes the same text from the store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder, lookup, text_hash
from storage.embedding import store as cache_vectors
from storage.meta import TURN_CONTEXT, check_compatible, read_facts
from storage.server.engine import Store
from tasks.files import open_memory_root
from tasks.privacy import forget, purge_session
from tasks.reembed import reembed
from tests.helpers import add_session, chat, run_sync
from tests.tasks.aging.helpers import local_cold

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
LONG = " ".join(f"Step {i}: check the seat map and the fare rules once more." for i in range(60))


class Recording:
    """A hashing embedder that keeps every text it is asked to embed."""

    def __init__(self, dim: int) -> None:
        self._inner = HashingEmbedder(dim)
        self.name, self.dim = self._inner.name, dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return self._inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)


def seed(store: Store) -> None:
    add_session(
        store,
        "trip",
        "alice",
        chat(
            MORNING,
            "I need to book flights to Lisbon for the conference in March.",
            "Sure. TAP has a direct flight on Friday morning and Iberia one via Madrid.",
            "I prefer window seats. Let's go with the TAP one on Friday.",
            LONG,
            "Thanks, that settles the booking for the conference trip.",
        ),
        title="Trip to Lisbon",
    )
    add_session(
        store,
        "untitled",
        "alice",
        chat(MORNING, "Remind me to water the tomato plants.", "I will remind you at six."),
    )


def turns(store: Store) -> list[tuple[int, str, np.ndarray]]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT id, content, embedding FROM memories WHERE kind = 'turn' "
                "ORDER BY session_id, occurred_at, id"
            )
        )
        return [(r.id, r.content, r.embedding.to_numpy()) for r in rows]


def test_a_turn_is_embedded_with_speaker_session_date_and_previous_turn(store: Store) -> None:
    seed(store)
    embedder = Recording(store.settings.embedding.dim)

    run_sync(store, AS_OF, embedder=embedder, min_user_messages=1, turn_context=True)

    stored = {content: vector for _, content, vector in turns(store)}
    answer = "aria: Sure. TAP has a direct flight on Friday morning and Iberia one via Madrid."
    assert answer in stored  # the stored text is the message alone
    expected = (
        f"{answer}\n(Trip to Lisbon, 2026-11-20)\n> "
        "Alice: I need to book flights to Lisbon for the conference in March."
    )
    assert expected in embedder.texts
    assert np.allclose(stored[answer], HashingEmbedder(embedder.dim).embed([expected])[0])
    first = "Alice: Remind me to water the tomato plants."
    assert f"{first}\n(2026-11-20)" in embedder.texts  # no title, nothing before it
    # A long message's chunks all answer the turn before the message; the header is capped.
    chunks = [t for t in embedder.texts if t.startswith("aria: ") and "fare rules" in t]
    window = "Alice: I prefer window seats. Let's go with the TAP one on Friday."
    assert len(chunks) >= 2 and all(t.endswith(f"\n> {window}") for t in chunks)
    thanks = next(t for t in embedder.texts if t.startswith("Alice: Thanks"))
    header, quoted = thanks.split("\n")[-2:]
    assert header == "(Trip to Lisbon, 2026-11-20)"
    assert quoted.startswith("> aria: ")  # the last chunk
    assert len(quoted) == len("> ") + 100


def test_without_the_setting_a_turn_is_embedded_as_stored(store: Store) -> None:
    seed(store)
    embedder = Recording(store.settings.embedding.dim)

    run_sync(store, AS_OF, embedder=embedder, min_user_messages=1, turn_context=False)

    contents = [content for _, content, _ in turns(store)]
    assert contents and set(contents) <= set(embedder.texts)
    assert not [t for t in embedder.texts if "\n> " in t or "\n(" in t]


def test_reembed_makes_the_texts_the_sync_embedded(store: Store) -> None:
    seed(store)
    synced = Recording(store.settings.embedding.dim)
    run_sync(store, AS_OF, embedder=synced, min_user_messages=1, turn_context=True)
    again = Recording(128)

    out = reembed(store.engine, again, turn_context=True)

    assert out.swapped
    assert sorted(again.texts) == sorted(set(synced.texts))
    for _, content, vector in turns(store):
        assert len(vector) == 128
        assert content in "\n".join(again.texts)


def adopted(store: Store) -> HashingEmbedder:
    """The store's embedder, its model recorded as connecting to a new store records it."""
    embedder = HashingEmbedder(store.settings.embedding.dim)
    with Session(store.engine) as session, session.begin():
        check_compatible(session, embedder)
    return embedder


def test_toggling_the_setting_and_reembedding_re_embeds_the_turns(store: Store) -> None:
    seed(store)
    embedder = adopted(store)
    run_sync(store, AS_OF, embedder=embedder, min_user_messages=1, turn_context=False)
    assert facts(store)[TURN_CONTEXT] == "off"  # recorded by the sync that wrote the turns
    assert reembed(store.engine, embedder, turn_context=False).already_current

    on = Recording(embedder.dim)
    out = reembed(store.engine, on, turn_context=True)

    assert out.swapped and not out.already_current
    assert facts(store)[TURN_CONTEXT] == "on"
    contextual = {t.split("\n")[0]: t for t in on.texts if "\n(" in t}
    for _, content, vector in turns(store):
        assert np.allclose(vector, embedder.embed([contextual[content]])[0])
    assert reembed(store.engine, embedder, turn_context=True).already_current

    off = Recording(embedder.dim)
    assert reembed(store.engine, off, turn_context=False).swapped
    assert facts(store)[TURN_CONTEXT] == "off"
    assert not [t for t in off.texts if "\n(" in t]
    for _, content, vector in turns(store):
        assert np.allclose(vector, embedder.embed([content])[0])


def test_the_sync_records_turns_embedded_in_context(store: Store) -> None:
    seed(store)
    embedder = adopted(store)
    run_sync(store, AS_OF, embedder=embedder, min_user_messages=1, turn_context=True)
    assert facts(store)[TURN_CONTEXT] == "on"
    assert reembed(store.engine, embedder, turn_context=True).already_current
    assert reembed(store.engine, embedder, turn_context=False).swapped


def facts(store: Store) -> dict[str, str]:
    with Session(store.engine) as session:
        return read_facts(session)


@pytest.mark.parametrize("erase", ["purge", "forget"])
def test_erasure_drops_the_cached_vectors_of_the_context_texts(
    store: Store, tmp_path: Path, erase: str
) -> None:
    seed(store)
    embedder = Recording(store.settings.embedding.dim)
    run_sync(store, AS_OF, embedder=embedder, min_user_messages=1, turn_context=True)
    texts = sorted(set(embedder.texts))
    with Session(store.engine) as session, session.begin():
        vectors = HashingEmbedder(8).embed(texts)
        cache_vectors(
            session, "m", [(text_hash(t), v) for t, v in zip(texts, vectors, strict=True)]
        )
    contextual = [text_hash(t) for t in texts if "\n(" in t]
    assert contextual

    cold, root = local_cold(tmp_path), open_memory_root(store.settings)
    if erase == "purge":
        purge_session(store.engine, cold, root, "trip", actor="t")
        purge_session(store.engine, cold, root, "untitled", actor="t")
    else:
        forget(store.engine, cold, root, "alice", actor="t")

    with Session(store.engine) as session:
        assert lookup(session, "m", contextual) == {}
