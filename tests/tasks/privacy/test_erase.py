"""Forget, export, purge, pin and unpin: erasure that truly erases, and an audit without content."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.errors import InputError
from storage.kernel.shards import Scope
from storage.keys import create_key
from storage.operations.ann import refresh_size, refresh_terms
from storage.queue import enqueue
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.aging import ColdStore, archive_old, compress_old
from tasks.files import open_memory_root
from tasks.privacy import Export, forget, purge_session, set_pin
from tests.helpers import add_session, chat, run_sync
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import (
    AS_OF,
    DENTIST,
    LONG_AGO,
    MONTHS_AGO,
    RECENTLY,
    TRIP,
    column,
    local_cold,
    s3_cold,
    scalar,
    synced_session,
)
from tests.tasks.files.writers import PausedWriter, temporaries

NAMESPACED = text(
    """
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t USING (table_schema, table_name)
    WHERE c.column_name = 'namespace' AND t.table_type = 'BASE TABLE'
      AND c.table_schema = current_schema()
    ORDER BY 1
    """
)


def per_table(store: Store, namespace: str) -> dict[str, int]:
    """Rows of the namespace in every table that has a namespace column."""
    with store.engine.connect() as conn:
        tables = conn.execute(NAMESPACED).scalars().all()
        return {
            t: conn.execute(
                text(f"SELECT count(*) FROM {t} WHERE namespace = :ns"), {"ns": namespace}
            ).scalar_one()
            for t in tables
        }


def full_history(store: Store, cold: ColdStore, namespace: str, prefix: str) -> None:
    """Every kind of data a namespace can have: sessions in all tiers, queue, long-term."""
    synced_session(store, f"{prefix}-old", namespace, LONG_AGO, TRIP)
    synced_session(store, f"{prefix}-mid", namespace, MONTHS_AGO, DENTIST)
    synced_session(store, f"{prefix}-new", namespace, RECENTLY, TRIP)
    put(store, namespace, [f"{namespace} likes green tea"], AS_OF - timedelta(days=2), kind="note")
    compress_old(store.engine, cold, HashingEmbedder(384), AS_OF - timedelta(days=90), 50, Scope())
    archive_old(store.engine, cold, AS_OF - timedelta(days=365), 1000, Scope())
    Retriever(store.engine, HashingEmbedder(384)).search(namespace, "flight Lisbon", as_of=AS_OF)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO memory_write_queue (namespace, op, payload, max_attempts, "
                "available_at, created_at, updated_at) VALUES (:ns, 'ADD_MEMORY', "
                '\'{"content": "secret plan"}\', 3, now(), now(), now())'
            ),
            {"ns": namespace},
        )
        conn.execute(
            text(
                "INSERT INTO long_term_entries (namespace, entry_key, text, section, memory_ids, "
                "score, first_seen_week, last_seen_week, status, updated_at) VALUES "
                "(:ns, 'k1', 'prefers window seats', 'facts', '{}', 1, '2026-11-16', "
                "'2026-11-16', 'in', now())"
            ),
            {"ns": namespace},
        )
    with Session(store.engine) as session, session.begin():
        create_key(session, namespace)


@pytest.fixture
def cold(s3_options: dict[str, object], s3_bucket: str) -> ColdStore:
    return s3_cold(s3_options, s3_bucket)


def test_forget_erases_every_row_and_object_of_the_namespace_and_nothing_else(
    store: Store, cold: ColdStore
) -> None:
    full_history(store, cold, "alice", "a")
    full_history(store, cold, "bob", "b")
    root = open_memory_root(store.settings)
    alice = per_table(store, "alice")
    assert all(
        alice[t]
        for t in (
            "memories",
            "archived_memories",
            "archive_manifest",
            "memory_write_queue",
            "long_term_entries",
            "memory_access_log",
            "chat_sessions",
            "episodes",
            "memory_file_blocks",
            "api_keys",
        )
    )
    assert cold.files("transcripts/namespace=alice") and cold.files("memories/namespace=alice")
    assert root.fs.exists(root.path("alice"))
    bob_before = per_table(store, "bob")
    bob_files = cold.files("memories/namespace=bob") + cold.files("transcripts/namespace=bob")
    bob_messages = scalar(store, "SELECT count(*) FROM chat_messages WHERE session_id LIKE 'b-%'")

    out = forget(store.engine, cold, root, "alice", actor="test")

    remaining = per_table(store, "alice")
    assert remaining.pop("audit_log") == 1  # the record of the erasure, and nothing else
    assert set(remaining.values()) == {0}, remaining
    assert scalar(store, "SELECT count(*) FROM chat_messages WHERE session_id LIKE 'a-%'") == 0
    assert cold.fs.find(f"{cold.root}/memories/namespace=alice") == []
    assert cold.fs.find(f"{cold.root}/transcripts/namespace=alice") == []
    assert not root.fs.exists(root.path("alice"))
    assert per_table(store, "bob") == bob_before
    assert sorted(
        cold.files("memories/namespace=bob") + cold.files("transcripts/namespace=bob")
    ) == sorted(bob_files)
    assert (
        scalar(store, "SELECT count(*) FROM chat_messages WHERE session_id LIKE 'b-%'")
        == bob_messages
    )
    assert root.fs.exists(root.path("bob"))
    assert out.rows["memories"] == alice["memories"] and out.cold_files >= 2
    with store.engine.connect() as conn:
        entry = conn.execute(text("SELECT action, namespace, target, details FROM audit_log")).one()
    assert (entry.action, entry.namespace) == ("forget", "alice")
    dumped = json.dumps(entry.details)
    for secret in ("Lisbon", "dentist", "green tea", "secret plan", "window"):
        assert secret not in dumped
    assert entry.details["memories"] == alice["memories"]


def test_export_first_writes_a_readable_bundle(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    full_history(store, cold, "alice", "a")
    hot = scalar(store, "SELECT count(*) FROM memories WHERE namespace = 'alice'")
    archived = scalar(store, "SELECT count(*) FROM archived_memories WHERE namespace = 'alice'")
    bundle = tmp_path / "export"
    root = open_memory_root(store.settings)
    folder = Path(root.path("alice"))
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    Path(root.path("alice2")).mkdir(parents=True)
    Path(root.path("alice2/MEMORY.md")).write_text("- a look-alike's memory\n")

    out = forget(store.engine, cold, root, "alice", actor="test", export=Export(str(bundle)))

    assert out.exported is not None and out.exported["memories"] == hot
    assert pq.read_table(bundle / "alice/memories.parquet").num_rows == hot
    assert sum(pq.read_table(p).num_rows for p in (bundle / "alice/archived").iterdir()) == archived
    assert list((bundle / "alice/transcripts").iterdir())
    lines = (bundle / "alice/sessions/a-new.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "session" and len(lines) == 5
    assert json.loads((bundle / "alice/bundle.json").read_text())["archived_memories"] == archived
    # The memory files as they were, MEMORY.md, daily logs and timeline, and no look-alike's.
    exported = bundle / "alice/files"
    copied = {
        str(p.relative_to(exported)): p.read_bytes() for p in exported.rglob("*") if p.is_file()
    }
    assert "timeline.jsonl" in files and copied == files
    assert out.exported["memory_files"] == len(files)
    assert not folder.exists() and Path(root.path("alice2/MEMORY.md")).exists()
    assert scalar(store, "SELECT count(*) FROM memories") == 0


def test_forget_refuses_a_bad_namespace(store: Store, tmp_path: Path) -> None:
    with pytest.raises(InputError):
        forget(
            store.engine, local_cold(tmp_path), open_memory_root(store.settings), "../x", actor="t"
        )


def test_purge_session_erases_it_and_all_derived_from_it(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    full_history(store, cold, "alice", "a")
    root = open_memory_root(store.settings)
    log = Path(root.path("alice/memory/2026-11-18.md"))
    assert "a-new@" in log.read_text()
    others = scalar(store, "SELECT count(*) FROM memories WHERE session_id <> 'a-new'")

    counts = purge_session(store.engine, cold, root, "a-new", actor="test")
    old = purge_session(store.engine, cold, root, "a-old", actor="test")

    assert counts["memories"] > 0 and counts["file_blocks_removed"] == 1
    assert "a-new@" not in log.read_text() and "Memory log" in log.read_text()
    assert old["archived_memories"] > 0 and old["transcripts"] == 1
    for table in (
        "memories",
        "episodes",
        "processed_sessions",
        "chat_messages",
        "archived_memories",
    ):
        assert (
            scalar(store, f"SELECT count(*) FROM {table} WHERE session_id IN ('a-new', 'a-old')")
            == 0
        )
    assert column(store, "SELECT id FROM chat_sessions ORDER BY id") == ["a-mid"]
    assert scalar(store, "SELECT count(*) FROM archive_manifest WHERE session_id = 'a-old'") == 0
    assert cold.files("transcripts/namespace=alice/year=2025") == []
    assert scalar(store, "SELECT count(*) FROM memories WHERE session_id = 'a-mid'") > 0
    assert others > 0
    assert column(store, "SELECT action FROM audit_log ORDER BY id") == ["purge_session"] * 2
    with pytest.raises(InputError):
        purge_session(store.engine, cold, root, "a-new", actor="test")


def test_purge_deletes_the_searches_that_returned_the_sessions_memories(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    full_history(store, cold, "alice", "a")
    of = {
        sid: column(store, f"SELECT id FROM memories WHERE session_id = '{sid}' ORDER BY id")
        for sid in ("a-new", "a-mid")
    }
    archived = column(
        store, "SELECT memory_id FROM archived_memories WHERE session_id = 'a-old' ORDER BY 1"
    )
    assert of["a-new"] and of["a-mid"] and archived
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM memory_access_log"))
        for context, ids in {
            "new and mid": [of["a-mid"][0], of["a-new"][0]],
            "old, archived": [archived[0]],
            "mid only": of["a-mid"],
        }.items():
            conn.execute(
                text(
                    "INSERT INTO memory_access_log (namespace, context, accessed_at, memory_ids) "
                    "VALUES ('alice', :context, now(), :ids)"
                ),
                {"context": context, "ids": ids},
            )

    new = purge_session(store.engine, cold, open_memory_root(store.settings), "a-new", actor="t")
    old = purge_session(store.engine, cold, open_memory_root(store.settings), "a-old", actor="t")

    assert (new["memory_access_log"], old["memory_access_log"]) == (1, 1)
    assert column(store, "SELECT context FROM memory_access_log") == ["mid only"]


def test_purge_removes_a_copy_of_the_session_a_killed_write_left(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    full_history(store, cold, "alice", "a")
    root = open_memory_root(store.settings)
    log = Path(root.path("alice/memory/2026-11-18.md"))
    with_session = log.read_text()
    # The file as before the write that added the session; that write was killed before
    # its rename, so only its hidden copy holds the session's block.
    marker = with_session.index("<!-- archivist:block daily:a-new@")
    log.write_text(with_session[: with_session.rindex("\n## ", 0, marker) + 1])
    with PausedWriter(log, with_session) as writer:
        writer.kill()
    assert len(temporaries(log.parent)) == 1

    counts = purge_session(store.engine, cold, root, "a-new", actor="test")

    assert counts["file_blocks_removed"] == 0  # nothing of it in the file itself
    assert temporaries(log.parent) == []
    assert all("a-new@" not in p.read_text() for p in log.parent.rglob("*") if p.is_file())


def test_pin_and_unpin_with_audit_and_pinned_never_age(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    (old,) = put(store, "alice", ["keep this forever"], AS_OF - timedelta(days=900))
    (archived,) = put(store, "alice", ["archive then pin"], AS_OF - timedelta(days=900))
    set_pin(store.engine, cold, old, pinned=True, embedder=HashingEmbedder(384), actor="test")
    archive_old(store.engine, cold, AS_OF - timedelta(days=365), 1000, Scope())
    assert column(store, "SELECT id FROM memories") == [old]

    set_pin(
        store.engine, cold, archived, pinned=True, embedder=HashingEmbedder(384), actor="test"
    )  # restored, then pinned
    set_pin(store.engine, cold, old, pinned=False, embedder=HashingEmbedder(384), actor="test")

    assert column(store, "SELECT id FROM memories WHERE pinned") == [archived]
    actions = column(store, "SELECT action FROM audit_log ORDER BY id")
    assert actions == ["pin", "restore", "pin", "unpin"]
    with pytest.raises(InputError):
        set_pin(
            store.engine, cold, 999_999, pinned=True, embedder=HashingEmbedder(384), actor="test"
        )


def test_purge_removes_the_whole_block_heading_included(store: Store, tmp_path: Path) -> None:
    day = AS_OF - timedelta(days=3)
    for sid, title, hour in (("s1", "Dentist appointment", 9), ("s2", "Team offsite", 11)):
        start = day.replace(hour=hour, minute=0)
        add_session(store, sid, "alice", chat(start, *TRIP), title=title)
    run_sync(store, day.replace(hour=23))
    root = open_memory_root(store.settings)
    log = Path(root.path(f"alice/memory/{day.date().isoformat()}.md"))
    assert "Dentist appointment" in log.read_text()

    purge_session(store.engine, local_cold(tmp_path), root, "s1", actor="test")

    left = log.read_text()
    assert "Dentist appointment" not in left and "s1@" not in left
    heading, marker = left.split("## ", 1)[1].splitlines()[:2]
    assert heading.endswith("· Team offsite (direct, aria)") and "s2@" in marker
    purge_session(store.engine, local_cold(tmp_path), root, "s2", actor="test")
    assert "## " not in log.read_text() and "Team offsite" not in log.read_text()


def test_forget_renames_the_namespace_in_the_runs_that_recorded_it(
    store: Store, tmp_path: Path
) -> None:
    with store.engine.begin() as conn:
        for namespace in ("alice", "bob", None):  # runs recorded before pseudonyms held names
            conn.execute(
                text(
                    "INSERT INTO runs (id, flow, as_of, parameters, status) VALUES "
                    "(gen_random_uuid(), 'memory-weekly-tidy', now(), :p, 'completed')"
                ),
                {"p": json.dumps({"namespace": namespace, "dry_run": False})},
            )
    root = open_memory_root(store.settings)

    out = forget(store.engine, local_cold(tmp_path), root, "alice", actor="t")

    recorded = column(store, "SELECT parameters->>'namespace' FROM runs ORDER BY 1")
    assert out.pseudonym.startswith("ns:") and out.flow_runs == 0  # none ran in Prefect
    assert sorted(recorded, key=str) == sorted([out.pseudonym, "bob", None], key=str)
    assert scalar(store, "SELECT count(*) FROM pseudonym_keys WHERE namespace = 'alice'") == 0


def test_purge_deletes_the_writes_queued_into_the_session(store: Store, tmp_path: Path) -> None:
    add_session(store, "s1", "alice", chat(RECENTLY, *TRIP))
    session = {"id": "s1", "namespace": "alice", "agent": "aria"}
    message = {"id": "m9", "role": "user", "speaker": "Alice", "content": "Lisbon again"}
    with Session(store.engine) as db, db.begin():
        for op, payload in (
            ("ADD_MEMORY", {"content": "window seat 14A", "session_id": "s1"}),
            ("RECORD_MESSAGE", {"session": session, "message": message | {"timestamp": RECENTLY}}),
            ("ADD_MEMORY", {"content": "green tea"}),
        ):
            enqueue(db, "alice", op, payload, now=RECENTLY)

    counts = purge_session(
        store.engine, local_cold(tmp_path), open_memory_root(store.settings), "s1", actor="t"
    )

    assert counts["memory_write_queue"] == 2
    assert column(store, "SELECT payload->>'content' FROM memory_write_queue") == ["green tea"]


def test_purge_counts_the_namespaces_common_words_again_without_the_session(
    store: Store, tmp_path: Path
) -> None:
    add_session(store, "s1", "alice", chat(RECENTLY, *TRIP))
    add_session(store, "s2", "alice", chat(RECENTLY + timedelta(hours=2), *DENTIST))
    run_sync(store, RECENTLY.replace(hour=23))
    with Session(store.engine) as session, session.begin():
        refresh_terms(session, "alice", 1)  # as the index step does for a large namespace
        refresh_size(session, "alice")
        refresh_size(session, "alice2")  # a look-alike's size stays
    terms = "SELECT lexeme, df FROM namespace_terms WHERE lexeme IN ('lisbon', 'dentist')"
    before = dict(column_pairs(store, terms))
    assert before["lisbon"] > 0 and before["dentist"] > 0

    counts = purge_session(
        store.engine, local_cold(tmp_path), open_memory_root(store.settings), "s1", actor="t"
    )

    after = dict(column_pairs(store, terms))
    assert "lisbon" not in after and counts["namespace_terms"] > 0  # only s1 said it
    dentist = scalar(
        store, "SELECT count(*) FROM memories WHERE tsv @@ to_tsquery('simple', 'dentist')"
    )
    assert after == {"dentist": dentist}
    # The namespace's stored size goes (counted whole until the index step stores it again).
    sizes = column(store, "SELECT namespace FROM namespace_sizes")
    assert counts["namespace_sizes"] == 1 and sizes == ["alice2"]


def column_pairs(store: Store, sql: str) -> list[tuple[str, int]]:
    with store.engine.connect() as conn:
        return [(str(a), int(b)) for a, b in conn.execute(text(sql))]
