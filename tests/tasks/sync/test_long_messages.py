"""Long messages (issue 16): every part searchable, once per message, re-synced in place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.records import MessageRecord
from storage.kernel.settings import RetrievalSettings
from storage.kernel.shards import Scope
from storage.queue import forget_memory
from storage.retrieval import ArchiveReader, Hit, Retriever, SearchOptions
from storage.server.engine import Store
from storage.sessions import record_messages
from tasks.aging import archive_old, compress_old
from tests.helpers import add_session, chat, counts, run_sync, snapshot
from tests.tasks.aging.helpers import column, local_cold

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
KEYWORD = "quetzalcoatlite"


def long_message(keyword: str = KEYWORD) -> str:
    """About 9,000 characters in paragraphs; ``keyword`` in the last 200 of them."""
    sentence = "Backup job {i} copied the billing volume to the eastern site without errors. "
    body = "\n\n".join("".join(sentence.format(i=10 * p + s) for s in range(6)) for p in range(19))
    text = f"{body}\n\nOne more thing: the {keyword} cable in rack 7 needs replacing soon."
    assert 8_800 <= len(text) <= 9_200 and text.index(keyword) > len(text) - 200
    return text


def seed(store: Store, start: datetime = MORNING, keyword: str = KEYWORD) -> None:
    add_session(
        store,
        "ops",
        "alice",
        chat(
            start,
            long_message(keyword),
            "I'll order a replacement cable for rack 7.",
            "Thanks, please do that this week.",
        ),
    )


def searcher(store: Store) -> Retriever:
    return Retriever(store.engine, HashingEmbedder(384), RetrievalSettings(), store.settings.tz)


def search(
    r: Retriever, query: str, *, limit: int = 10, options: SearchOptions | None = None
) -> list[Hit]:
    chosen = options or SearchOptions()
    return r.search("alice", query, limit=limit, as_of=AS_OF, record_access=False, options=chosen)


def chunks_of_m0(store: Store) -> list[tuple[int, str]]:
    sql = (
        "SELECT id, content FROM memories WHERE kind = 'turn' AND message_ids = '{m0}' ORDER BY id"
    )
    with store.engine.connect() as conn:
        return [(int(i), str(c)) for i, c in conn.execute(text(sql))]


def test_a_word_near_the_end_of_a_9000_character_message_is_found(store: Store) -> None:
    seed(store)
    run_sync(store, AS_OF)
    r = searcher(store)

    for weights in ({"lexical": 1.0}, {"dense": 1.0}, None):  # keyword, vector, default
        top = search(r, KEYWORD, options=SearchOptions(weights=weights))[0]
        assert (top.kind, top.session_id, top.message_ids) == ("turn", "ops", ("m0",))
        assert KEYWORD in top.content, weights
    chunks = chunks_of_m0(store)
    assert len(chunks) >= 5 and all(len(c) <= len("Alice: ") + 2_000 for _, c in chunks)
    assert chunks[0][1].startswith("Alice: Backup job 0 ")


def test_a_long_message_fills_one_place_in_the_results(store: Store) -> None:
    seed(store)
    run_sync(store, AS_OF)

    hits = search(searcher(store), f"backup billing volume {KEYWORD}", limit=10)

    messages = [(h.session_id, h.message_ids) for h in hits if h.kind == "turn"]
    assert len(messages) == len(set(messages)), "a message came back more than once"
    (mine,) = [h for h in hits if h.kind == "turn" and h.message_ids == ("m0",)]
    assert KEYWORD in mine.content  # its best chunk: the one with every word of the query


def test_resync_writes_no_duplicate_chunks_and_an_edit_replaces_them(store: Store) -> None:
    seed(store)
    run_sync(store, AS_OF)
    before = chunks_of_m0(store)
    state = (counts(store), snapshot(store))

    assert run_sync(store, AS_OF).written.sessions == 0
    assert (counts(store), snapshot(store)) == state
    later = MORNING + timedelta(hours=2)
    add_session(store, "ops", "alice", [("user", "And the UPS battery?", later)], first_index=3)
    again = run_sync(store, AS_OF)
    assert again.written.sessions == 1 and chunks_of_m0(store) == before  # kept, same ids

    edited = long_message("xylophonist")
    message = MessageRecord(
        id="m0", role="user", speaker="Alice", content=edited, timestamp=MORNING
    )
    with Session(store.engine) as session, session.begin():
        record_messages(session, "ops", [message])
    run_sync(store, AS_OF)

    after = chunks_of_m0(store)
    assert not any(KEYWORD in c for _, c in after)
    assert sum("xylophonist" in c for _, c in after) == 1
    assert len({c for _, c in after}) == len(after) == len(before)
    assert {i for i, c in before if KEYWORD not in c} <= {i for i, _ in after}  # kept as they were
    assert all(KEYWORD not in h.content for h in search(searcher(store), KEYWORD))


def test_chunks_archive_and_compress_like_other_turns(store: Store, tmp_path: Path) -> None:
    old = MORNING - timedelta(days=400)
    seed(store, old)
    run_sync(store, old.replace(hour=23))
    chunks = chunks_of_m0(store)
    assert len(chunks) >= 5
    cold = local_cold(tmp_path)

    archive_old(store.engine, cold, AS_OF - timedelta(days=365), 10_000, Scope())
    assert chunks_of_m0(store) == []
    archived = column(store, "SELECT memory_id FROM archived_memories ORDER BY memory_id")
    assert {i for i, _ in chunks} <= set(archived)
    r = searcher(store)
    r.archive = ArchiveReader(fs=cold.fs)
    hits = search(r, f"backup billing {KEYWORD}", options=SearchOptions(include_archived=True))
    mine = [h for h in hits if h.kind == "turn" and h.message_ids == ("m0",)]
    assert len(mine) == 1 and KEYWORD in mine[0].content and mine[0].tier == "archived"


def test_compression_folds_every_chunk_into_the_episode(store: Store, tmp_path: Path) -> None:
    old = MORNING - timedelta(days=120)
    seed(store, old)
    run_sync(store, old.replace(hour=23))
    assert len(chunks_of_m0(store)) >= 5

    done = compress_old(
        store.engine,
        local_cold(tmp_path),
        HashingEmbedder(384),
        AS_OF - timedelta(days=90),
        10,
        Scope(),
    )

    assert done.sessions == 1
    assert column(store, "SELECT count(*) FROM memories WHERE kind = 'turn'") == [0]


def test_a_very_long_message_does_not_crowd_others_out_of_the_results(store: Store) -> None:
    paste = "\n\n".join(
        f"Backup job {i} copied the billing volume to the eastern site." for i in range(2_000)
    )
    add_session(store, "paste", "alice", chat(MORNING, paste, "Noted.", "Keep it for the audit."))
    notes = [f"The billing report number {i} is due on Friday, said Alice." for i in range(8)]
    add_session(store, "notes", "alice", chat(MORNING, *notes))
    run_sync(store, AS_OF)
    assert len(column(store, "SELECT id FROM memories WHERE session_id = 'paste'")) > 60

    hits = search(
        searcher(store), "backup billing volume", limit=8, options=SearchOptions(kinds=["turn"])
    )

    assert len(hits) == 8
    assert sum(h.session_id == "paste" for h in hits) <= 2  # the paste once (its reply maybe)


def test_forgetting_a_chunk_forgets_the_whole_message_and_nothing_else(store: Store) -> None:
    seed(store)
    run_sync(store, AS_OF)
    hit = search(searcher(store), KEYWORD)[0]
    assert hit.kind == "turn" and hit.message_ids == ("m0",) and len(chunks_of_m0(store)) > 2
    assert hit.memory_id is not None
    others = column(store, "SELECT id FROM memories WHERE NOT message_ids = ARRAY['m0']")

    with Session(store.engine) as session, session.begin():
        assert forget_memory(session, "alice", hit.memory_id) == "deleted"

    assert chunks_of_m0(store) == []
    assert column(store, "SELECT id FROM memories WHERE NOT message_ids = ARRAY['m0']") == others
    assert search(searcher(store), KEYWORD) == []  # only the forgotten message said it
    turns = [h for h in search(searcher(store), "cable for rack 7") if h.kind == "turn"]
    assert turns and all("m0" not in h.message_ids for h in turns)
