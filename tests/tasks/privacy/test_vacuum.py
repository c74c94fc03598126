"""After an erasure the deleted rows leave the table files and the planner's statistics, and
their cached vectors go."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder, lookup, text_hash
from storage.embedding import store as cache_vectors
from storage.server.engine import Store
from tasks.files import open_memory_root
from tasks.privacy import forget, purge_session
from tests.helpers import add_session, chat, run_sync
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import local_cold

DAY = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
ALICE = "Quokkaberry harvest planned with Zephyrine in the north orchard"
BOB = "Gooseberry harvest planned with Bartholomew in the south orchard"

FILES = text(
    """
    SELECT pg_relation_filepath(c.oid) FROM pg_class c
    WHERE c.oid = CAST(:table AS regclass)
       OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = CAST(:table AS regclass))
       OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = CAST(:table AS regclass))
    """
)


def table_bytes(conn: Connection, table: str) -> bytes:
    """The on-disk bytes of a table, its TOAST table and its indexes, after a checkpoint."""
    conn.execute(text("CHECKPOINT"))
    base = Path(conn.execute(text("SHOW data_directory")).scalar_one())
    paths = [base / p for p in conn.execute(FILES, {"table": table}).scalars() if p]
    return b"".join(p.read_bytes() for p in paths if p.exists())


STATS = text("SELECT tablename, attname, s::text FROM pg_stats s WHERE schemaname = 'public'")


def statistics_holding(conn: Connection, *needles: str) -> list[str]:
    """``table.column`` of every statistic (most common values, histogram...) quoting one."""
    rows = conn.execute(STATS).all()
    return [f"{t}.{a}" for t, a, s in rows if any(n in s.casefold() for n in needles)]


def seed(store: Store) -> None:
    for namespace, content in (("alice", ALICE), ("bob", BOB)):
        put(store, namespace, [f"{content} ({i})" for i in range(40)], DAY)


def test_full_vacuum_leaves_no_deleted_text_in_the_table_files(
    store: Store, tmp_path: Path
) -> None:
    seed(store)
    root = open_memory_root(store.settings)
    with store.engine.connect() as conn:
        assert b"Zephyrine" in table_bytes(conn, "memories")  # the scan sees stored text

    out = forget(store.engine, local_cold(tmp_path), root, "alice", actor="t", full_vacuum=True)

    assert "memories" in out.vacuumed
    with store.engine.connect() as conn:
        on_disk = table_bytes(conn, "memories")
    assert b"Zephyrine" not in on_disk and b"zephyrin" not in on_disk  # text and lexemes
    assert b"Bartholomew" in on_disk


def test_forget_vacuums_what_it_touched_and_drops_the_namespace_vectors(
    store: Store, tmp_path: Path
) -> None:
    seed(store)
    embedder = HashingEmbedder(8)
    texts = {ns: f"{content} (0)" for ns, content in (("alice", ALICE), ("bob", BOB))}
    hashes = {ns: text_hash(t) for ns, t in texts.items()}
    with Session(store.engine) as session, session.begin():
        vectors = embedder.embed(list(texts.values()))
        cache_vectors(
            session,
            "m",
            [(hashes[ns], np.asarray(v)) for ns, v in zip(texts, vectors, strict=True)],
        )

    out = forget(
        store.engine, local_cold(tmp_path), open_memory_root(store.settings), "alice", actor="t"
    )

    assert out.rows["embedding_cache"] == 1
    assert {"memories", "embedding_cache"} <= set(out.vacuumed)
    assert "chat_sessions" not in out.vacuumed  # alice had none: nothing to vacuum there
    with Session(store.engine) as session:
        assert set(lookup(session, "m", list(hashes.values()))) == {hashes["bob"]}
    with store.engine.connect() as conn:
        vacuumed = conn.execute(
            text("SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'memories'")
        ).scalar_one()
    assert vacuumed >= 1


def test_purge_vacuums_and_drops_the_session_vectors(store: Store, tmp_path: Path) -> None:
    add_session(store, "s1", "alice", chat(DAY, ALICE, "Noted.", f"Also {ALICE}"))
    run_sync(store, DAY.replace(hour=23))
    with store.engine.connect() as conn:
        contents = conn.execute(text("SELECT content FROM memories")).scalars().all()
    with Session(store.engine) as session, session.begin():
        vectors = HashingEmbedder(8).embed(list(contents))
        cache_vectors(
            session, "m", [(text_hash(c), v) for c, v in zip(contents, vectors, strict=True)]
        )

    counts = purge_session(
        store.engine,
        local_cold(tmp_path),
        open_memory_root(store.settings),
        "s1",
        actor="t",
        full_vacuum=True,
    )

    # one cached vector per distinct text (a one-sentence session's summary is its turn)
    assert counts["embedding_cache"] == len(set(contents)) > 0
    with store.engine.connect() as conn:
        assert b"Zephyrine" not in table_bytes(conn, "chat_messages")
        assert b"Zephyrine" not in table_bytes(conn, "memories")


def test_forget_leaves_no_value_of_the_namespace_in_the_planner_statistics(
    store: Store, tmp_path: Path
) -> None:
    seed(store)
    add_session(store, "s-zebrafog", "alice", chat(DAY, ALICE, "Noted.", f"Also {ALICE}"))
    with store.engine.begin() as conn:  # what autovacuum's ANALYZE does now and then
        conn.execute(text("ANALYZE"))
        held = statistics_holding(conn, "zephyrin", "zebrafog")
    assert "chat_messages.session_id" in held and "memories.content" in held  # it can see

    forget(store.engine, local_cold(tmp_path), open_memory_root(store.settings), "alice", actor="t")

    with store.engine.connect() as conn:
        # chat_messages is empty now: ANALYZE alone would have kept its old statistics
        assert statistics_holding(conn, "zephyrin", "zebrafog") == []
        assert "memories.content" in statistics_holding(conn, "bartholomew")


def test_full_vacuum_rewrites_tables_an_earlier_step_emptied_and_the_statistics(
    store: Store, tmp_path: Path
) -> None:
    seed(store)
    put(store, "ns-zebrafog", [ALICE] * 3, DAY)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE memories"))
        # As archival does: the rows leave memories before forget runs, which finds none.
        conn.execute(text("DELETE FROM memories WHERE namespace = 'ns-zebrafog'"))
    with store.engine.connect() as conn:
        assert b"Zephyrine" in table_bytes(conn, "memories")
        # A short array of most common values is stored as it is (a long one compressed).
        assert b"ns-zebrafog" in table_bytes(conn, "pg_statistic")

    out = forget(
        store.engine,
        local_cold(tmp_path),
        open_memory_root(store.settings),
        "ns-zebrafog",
        actor="t",
        full_vacuum=True,
    )

    assert out.rows["memories"] == 0 and "memories" in out.vacuumed
    with store.engine.connect() as conn:
        on_disk = table_bytes(conn, "memories")
        assert b"ns-zebrafog" not in on_disk and b"Bartholomew" in on_disk
        assert b"ns-zebrafog" not in table_bytes(conn, "pg_statistic")
