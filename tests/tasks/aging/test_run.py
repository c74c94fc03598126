"""Salience decay, compression and opt-in deletion, as plain functions on the real store."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel import scoring
from storage.kernel.settings import Settings
from storage.kernel.shards import Scope
from storage.memories import NewMemory, insert_memories
from storage.operations.aging import DecayParams
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from tasks.aging import archive_old, compress_old, decay, delete_old, write_transcripts
from tasks.sync import build_context
from tests.helpers import add_session, chat, run_sync
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import (
    AS_OF,
    LONG_AGO,
    MONTHS_AGO,
    RECENTLY,
    column,
    local_cold,
    scalar,
    synced_session,
)

HALF_LIFE = 30.0


def params(as_of: datetime = AS_OF, epsilon: float = 0.01, *, dry_run: bool = False) -> DecayParams:
    return DecayParams(as_of, HALF_LIFE, epsilon, Scope(dry_run=dry_run))


def test_decay_in_sql_equals_the_scoring_formula(store: Store) -> None:
    samples = [(0, 0.0), (3, 10.0), (12, 45.5), (40, 200.0), (0, 5000.0), (7, -3.0)]
    ids = []
    for n, days in samples:
        ids += put(store, "alice", [f"fact {n} {days}"], AS_OF - timedelta(days=days + 1))
    with store.engine.begin() as conn:
        for mid, (n, days) in zip(ids, samples, strict=True):
            conn.execute(
                text("UPDATE memories SET access_count = :n, last_accessed_at = :t WHERE id = :id"),
                {"n": n, "t": AS_OF - timedelta(days=days), "id": mid},
            )

    out = decay(store.engine, params(epsilon=0.0), batch=2)  # several id batches

    assert out.memories_seen == len(samples) and out.batches >= 3
    got = dict(
        zip(
            *[column(store, f"SELECT {c} FROM memories ORDER BY id") for c in ("id", "salience")],
            strict=True,
        )
    )
    for mid, (n, days) in zip(ids, samples, strict=True):
        assert got[mid] == pytest.approx(scoring.salience(n, days, HALF_LIFE), rel=1e-9)


def test_rows_that_move_less_than_epsilon_are_not_written(store: Store) -> None:
    put(store, "alice", [f"note {i}" for i in range(5)], AS_OF - timedelta(days=20))
    first = decay(store.engine, params())
    versions = column(store, "SELECT xmin::text FROM memories ORDER BY id")

    again = decay(store.engine, params(AS_OF + timedelta(hours=1)))  # moves ~0.0005 each

    assert first.memories_written == 5
    assert again.memories_written == 0 and again.memories_seen == 5
    assert column(store, "SELECT xmin::text FROM memories ORDER BY id") == versions
    later = decay(store.engine, params(AS_OF + timedelta(days=10)))
    assert later.memories_written == 5


def test_a_backfilled_memory_starts_decayed_so_the_first_decay_writes_nothing(
    store: Store,
) -> None:
    embedder = HashingEmbedder(store.settings.embedding.dim)
    rows = [
        NewMemory(
            namespace="alice",
            kind="fact",
            content=f"fact from {days} days ago",
            content_key=f"k{days}",
            embedding=embedder.embed([f"fact {days}"])[0],
            embedding_model=embedder.name,
            importance=0.5,
            vehemence=0.0,
            session_id=None,
            message_ids=(),
            run_id=None,
            extractor="test",
            occurred_at=AS_OF - timedelta(days=days),
            created_at=AS_OF,
        )
        for days in (0, 60, 400)
    ]
    with Session(store.engine) as session, session.begin():
        backfilled = insert_memories(session, rows, half_life_days=HALF_LIFE)
        fresh = insert_memories(session, [replace(rows[1], content_key="plain")])

    salience = dict(
        zip(
            column(store, "SELECT id FROM memories ORDER BY id"),
            column(store, "SELECT salience FROM memories ORDER BY id"),
            strict=True,
        )
    )
    assert [salience[i] for i in backfilled] == pytest.approx([1.0, 0.25, 0.01])
    assert salience[fresh[0]] == 1.0  # no half-life given: starts at 1, as before
    out = decay(store.engine, params())
    assert out.memories_seen == 4 and out.memories_written == 1  # only the one left at 1


def test_the_sync_gives_new_memories_the_configured_half_life(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, aging={"half_life_days": 12.5})
    ctx = build_context(settings, HashingEmbedder(8), AS_OF, None, dry_run=False)
    assert ctx.half_life_days == 12.5


def test_dry_run_counts_without_writing(store: Store) -> None:
    put(store, "alice", ["old note"], AS_OF - timedelta(days=90))
    out = decay(store.engine, params(dry_run=True))
    assert out.memories_written == 1
    assert scalar(store, "SELECT salience FROM memories") == 1.0


def test_pinned_memories_and_their_episodes_keep_full_salience(store: Store) -> None:
    synced_session(store, "trip", "alice", LONG_AGO)
    episode_memory = scalar(store, "SELECT memory_id FROM episodes WHERE session_id = 'trip'")
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE memories SET pinned = true WHERE id = :id"), {"id": episode_memory}
        )

    decay(store.engine, params())

    assert scalar(store, "SELECT salience FROM memories WHERE pinned") == 1.0
    assert scalar(store, "SELECT salience FROM episodes") == 1.0
    assert scalar(store, "SELECT max(salience) FROM memories WHERE NOT pinned") == 0.01


def test_episode_salience_follows_its_memory_access(store: Store) -> None:
    synced_session(store, "trip", "alice", MONTHS_AGO)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE memories SET access_count = 5, last_accessed_at = :t "
                "WHERE id = (SELECT memory_id FROM episodes)"
            ),
            {"t": AS_OF - timedelta(days=15)},
        )
    out = decay(store.engine, params())
    assert out.episodes_written == 1
    expected = scoring.salience(5, 15, HALF_LIFE)
    assert scalar(store, "SELECT salience FROM episodes") == pytest.approx(expected)


def compress(store: Store, tmp_path: Path, *, dry_run: bool = False):
    return compress_old(
        store.engine,
        local_cold(tmp_path),
        HashingEmbedder(384),
        AS_OF - timedelta(days=90),
        10,
        Scope(dry_run=dry_run),
    )


def test_compression_keeps_the_summary_and_counts_and_archives_the_transcript_first(
    store: Store, tmp_path: Path
) -> None:
    synced_session(store, "old", "alice", MONTHS_AGO)
    synced_session(store, "new", "alice", RECENTLY)
    turns = scalar(
        store, "SELECT count(*) FROM memories WHERE session_id = 'old' AND kind = 'turn'"
    )
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE memories SET access_count = 2 WHERE kind = 'turn'"))
        conn.execute(  # a search that returned the turns: history, kept as it was
            text(
                "INSERT INTO memory_access_log (memory_ids, namespace, accessed_at) "
                "SELECT array_agg(id ORDER BY id), 'alice', now() FROM memories "
                "WHERE session_id = 'old' AND kind = 'turn'"
            )
        )
        conn.execute(  # a search's access not folded yet: it moves to the episode too
            text(
                "INSERT INTO memory_access_pending (memory_id, namespace, hits, last_accessed_at) "
                "SELECT id, namespace, 1, now() FROM memories WHERE session_id = 'old' "
                "AND kind = 'turn' ORDER BY id LIMIT 1"
            )
        )
    episode_memory = scalar(store, "SELECT memory_id FROM episodes WHERE session_id = 'old'")

    out = compress(store, tmp_path)

    assert (out.sessions, out.turns_folded, out.messages_deleted) == (1, turns, 4)
    assert scalar(store, "SELECT count(*) FROM chat_messages WHERE session_id = 'old'") == 0
    assert scalar(store, "SELECT count(*) FROM chat_messages WHERE session_id = 'new'") == 4
    assert (
        column(store, "SELECT kind FROM memories WHERE session_id = 'old' AND kind = 'turn'") == []
    )
    row = scalar(
        store, "SELECT tier || ':' || access_count FROM memories WHERE id = :i", i=episode_memory
    )
    assert row == f"compressed:{2 * turns + 1}"
    logged = scalar(store, "SELECT cardinality(memory_ids) FROM memory_access_log")
    assert logged == turns
    uri, rows, status = (
        column(store, f"SELECT {c} FROM archive_manifest WHERE session_id = 'old'")[0]
        for c in ("uri", "row_count", "status")
    )
    transcript = pq.read_table(uri.removeprefix("file://"))
    assert (rows, status, transcript.num_rows) == (4, "committed", 4)
    assert "/transcripts/namespace=alice/year=2026/old.parquet" in uri
    assert transcript.column("content").to_pylist()[0].startswith("I need to book flights")
    assert compress(store, tmp_path).sessions == 0  # idempotent


def test_a_crash_after_the_transcript_is_written_loses_nothing(
    store: Store, tmp_path: Path
) -> None:
    synced_session(store, "old", "alice", MONTHS_AGO)
    from sqlalchemy.orm import Session

    from storage.operations.aging import compressible

    with Session(store.engine) as session:
        batch = compressible(session, AS_OF - timedelta(days=90), None)
    write_transcripts(store.engine, local_cold(tmp_path), batch)  # then the process dies

    assert scalar(store, "SELECT count(*) FROM chat_messages") == 4
    assert scalar(store, "SELECT status FROM archive_manifest") == "verified"
    assert compress(store, tmp_path).sessions == 1
    assert scalar(store, "SELECT count(*) FROM chat_messages") == 0
    assert column(store, "SELECT status FROM archive_manifest") == ["committed"]


def test_pinned_sessions_are_never_compressed(store: Store, tmp_path: Path) -> None:
    synced_session(store, "old", "alice", MONTHS_AGO)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE memories SET pinned = true "
                "WHERE id = (SELECT min(id) FROM memories WHERE kind = 'turn')"
            )
        )
    assert compress(store, tmp_path).sessions == 0
    assert scalar(store, "SELECT count(*) FROM chat_messages") == 4


def test_deletion_is_off_by_default_and_on_when_enabled(store: Store, tmp_path: Path) -> None:
    put(store, "alice", ["ancient a", "ancient b"], AS_OF - timedelta(days=800))
    kept = put(store, "alice", ["ancient pinned"], AS_OF - timedelta(days=800))
    put(store, "alice", ["recent"], AS_OF - timedelta(days=3))
    archived = put(store, "alice", ["ancient archived"], AS_OF - timedelta(days=900))
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE memories SET pinned = true WHERE id = :id"), {"id": kept[0]})
        conn.execute(
            text("UPDATE memories SET occurred_at = occurred_at WHERE id = :id"),
            {"id": archived[0]},
        )
    cold = local_cold(tmp_path)
    archive_old(store.engine, cold, AS_OF - timedelta(days=850), 1000, Scope())
    assert store.settings.aging.deletion_enabled is False
    cutoff = AS_OF - timedelta(days=730)

    off = delete_old(
        store.engine, cold, cutoff, Scope(), enabled=store.settings.aging.deletion_enabled
    )

    assert off.enabled is False and scalar(store, "SELECT count(*) FROM memories") == 4
    on = delete_old(store.engine, cold, cutoff, Scope(), enabled=True)
    assert (on.hot_rows, on.archived_rows) == (2, 1)
    assert column(store, "SELECT content FROM memories ORDER BY id") == ["ancient pinned", "recent"]
    assert scalar(store, "SELECT count(*) FROM archive_manifest") == 0
    assert list(Path(tmp_path / "archive").rglob("*.parquet")) == []
    assert AS_OF.tzinfo is UTC


def test_an_episode_is_found_by_its_session_title_before_and_after_compression(
    store: Store, tmp_path: Path
) -> None:
    turns = (
        "Can you move my appointment with Dr. Weber to Thursday morning?",
        "Done: Thursday 9:30 with Dr. Weber, same practice as before.",
        "Great, and remind me the day before please.",
        "I will remind you on Wednesday evening.",
    )
    add_session(store, "teeth", "alice", chat(MONTHS_AGO, *turns), title="Dentist appointment")
    run_sync(store, MONTHS_AGO.replace(hour=23, minute=0), namespace="alice")
    retriever = Retriever(store.engine, HashingEmbedder(384))

    def episode_hits() -> list[str]:
        hits = retriever.search(
            "alice", "when is the dentist?", as_of=AS_OF, options=SearchOptions(kinds=["episode"])
        )
        return [h.content for h in hits if h.factors["bm25"] > 0]

    (before,) = episode_hits()
    assert before.startswith("Dentist appointment. ")
    assert compress(store, tmp_path).sessions == 1
    assert episode_hits() == [before]
