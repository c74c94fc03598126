"""Forget and purge erase what they erase everywhere it went: store, disk, files, bucket,
Prefect.

Every flow runs for real (sync with transcripts, summaries, queue drain, a tidy per
namespace, quality, watchdog, an ``ANALYZE`` as autovacuum would run one, the index step,
ageing into an S3 archive), then ``memory-forget`` with ``full_vacuum``, or, separately,
``purge`` with ``full_vacuum``. ``erasure_scan`` then searches every table and column,
``pg_stats``, the files of every relation of the database after a ``CHECKPOINT``, every
file under the data dir and the memory root, every object in the bucket and every row of
the Prefect database for the content's marker words and for every id a user chose
(sessions, messages, idempotency keys, a queued item's session; they all hold
"zebrafog"), and, after forget, the namespace's name ("wombatique"). The one thing allowed
to keep the name is the audit log's record of the forget (its row, and the pages of its
table and indexes).

The transcript files have plain names: they are the operator's input, which Archivist
neither deletes nor hides (a bad line is reported as file:line so it can be fixed).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import s3fs
from sqlalchemy import text
from sqlalchemy.orm import Session

from flows.aging import memory_aging
from flows.daily_sync import memory_sync_daily
from flows.forget import memory_forget
from flows.quality_report import memory_quality_report
from flows.queue_drain import memory_queue_drain
from flows.session_summaries import memory_session_summaries
from flows.watchdog import memory_cron_watchdog
from flows.weekly_tidy import memory_weekly_tidy
from storage.embedding import HashingEmbedder
from storage.kernel.settings import Settings
from storage.queue import enqueue
from storage.retrieval import Retriever
from storage.server.engine import Store, open_store
from tasks.aging import open_cold_store
from tasks.ann_index import refresh_ann_index
from tasks.documents import purge_documents
from tasks.files import open_memory_root
from tasks.privacy import purge_session
from tests.flows import erasure_scan as scan

CONTENT = ("quokkaberr", "zephyrin")  # stems too: the full-text index keeps "quokkaberri"
IDS = "zebrafog"  # in every id a user chose
NAME = "wombatique"  # in the forgotten namespace's name
GONE, KEEP = "ns-wombatique", "ns-keeper"
DAY = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
SUNDAY = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)
LONG_AGO = DAY - timedelta(days=420)
SAYS = (
    ("user", "I want to plant {fruit} bushes with {name} on Friday in Porto."),
    ("assistant", "Good idea: {fruit} likes sun. {name} can water them."),
    ("user", "Let's go with the {fruit} plan. I prefer {name} to lead it."),
    ("assistant", "Noted: {name} leads the {fruit} planting."),
)


def transcript(
    sid: str, namespace: str, words: tuple[str, str], start: datetime, part: str = ""
) -> list[str]:
    """A session's JSONL lines; ``part`` tells apart the messages of a later state."""
    fruit, name = words
    head = {"type": "session", "id": sid, "namespace": namespace, "agent": "aria"}
    rows = [json.dumps(head | {"title": f"{fruit} garden with {name}"})]
    for i, (role, said) in enumerate(SAYS):
        at = (start + timedelta(minutes=2 * i)).isoformat()
        msg = {"type": "message", "id": f"msg-{sid}-{part}{i}", "role": role, "speaker": role}
        said = said.format(fruit=fruit, name=name)
        rows.append(json.dumps(msg | {"content": said, "timestamp": at}))
    return rows


def write_inbox(inbox: Path, sessions: list[tuple[str, str, tuple[str, str], datetime]]) -> Path:
    inbox.mkdir(parents=True, exist_ok=True)
    for n, (sid, namespace, words, start) in enumerate(sessions):
        rows = transcript(sid, namespace, words, start)
        if IDS in sid:  # a bad line whose refused value is content: never quoted
            rows.append(
                json.dumps({"type": "message", "id": f"msg-{sid}-x", "role": " ".join(words)})
            )
        (inbox / f"chat-{n}.jsonl").write_text("\n".join(rows) + "\n")
    return inbox


DOCUMENT = (
    "# Quokkaberry handbook\n\nZephyrine keeps the quokkaberry jam recipe in the pantry.\n\n"
    "## Harvest\n\nPick the quokkaberries at dawn.\n"
)


def queue(settings: Settings, namespace: str, session_id: str, *, others: bool) -> None:
    """A note into the session; with ``others``, a note of no session, one into a session
    never recorded, and a document (as the HTTP API and MCP add one), each with an
    idempotency key."""
    writes = [("ADD_MEMORY", {"content": "Zephyrine's jam", "session_id": session_id}, "in")]
    if others:
        writes += [
            (
                "ADD_MEMORY",
                {"content": "Quokkaberry jam recipe from Zephyrine", "kind": "note"},
                "jam",
            ),
            ("ADD_MEMORY", {"content": "a note", "session_id": f"nonexistent-{IDS}"}, "lost"),
            ("ADD_DOCUMENT", document(), "doc"),
        ]
    with Session(open_store(settings).engine) as session, session.begin():
        for op, payload, key in writes:
            enqueue(
                session,
                namespace,
                op,
                payload,
                idempotency_key=f"idem-{IDS}-{key}",
                now=DAY,
            )


def document() -> dict[str, str]:
    """A document as the HTTP API and MCP queue it: a name and a tag the user chose."""
    return {"name": f"handbook-{IDS}.md", "text": DOCUMENT, "tag": f"kitchen-{IDS}"}


def run_every_flow(settings: Settings, inbox: Path, aging_as_of: datetime) -> None:
    memory_sync_daily(as_of=DAY.replace(hour=23), transcripts_url=str(inbox))
    memory_session_summaries(as_of=DAY.replace(hour=23))
    memory_queue_drain(as_of=DAY.replace(hour=23, minute=30))
    for namespace in (GONE, KEEP):  # runs whose parameters name the namespace
        memory_weekly_tidy(as_of=SUNDAY, namespace=namespace)
    memory_quality_report(as_of=SUNDAY, fail_on_critical=False)
    memory_cron_watchdog(as_of=SUNDAY, deployments=[])
    store = open_store(settings)
    retriever = Retriever(store.engine, HashingEmbedder(settings.embedding.dim))
    for namespace in (GONE, KEEP):  # logged, then counted by day once the log's window ends
        retriever.search(namespace, "planting on Friday", as_of=DAY.replace(hour=23))
    with store.engine.connect() as conn:
        conn.execute(text("ANALYZE"))  # what autovacuum does now and then
        conn.commit()
    index_every_namespace(store)
    memory_aging(as_of=aging_as_of)


def index_every_namespace(store: Store) -> None:
    """``archivist index`` as if every namespace were large and every word common: each gets
    its HNSW indexes, its stored size and its words' counts (memories' and chunks')."""
    refresh_ann_index(store.engine, min_rows=1, term_min_df=1)


def everything(
    settings: Settings, fs: s3fs.S3FileSystem, bucket: str, needles: scan.Needles
) -> list[scan.Hit]:
    engine = open_store(settings).engine
    return (
        scan.store_rows(engine, needles)
        + scan.statistics(engine, needles)
        + scan.relation_files(engine, needles)
        + scan.files(needles, settings.data_dir, Path(settings.memory_root_url))
        + scan.bucket(fs, bucket, needles)
        + scan.prefect_rows(needles)
    )


@pytest.fixture
def s3_env(
    flow_env: Settings,
    s3_bucket: str,
    s3_options: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Settings, s3fs.S3FileSystem, str]:
    monkeypatch.setenv("ARCHIVIST_AGING__ARCHIVE_URL", f"s3://{s3_bucket}/cold")
    monkeypatch.setenv("ARCHIVIST_STORAGE_OPTIONS", json.dumps(s3_options))
    return Settings(), s3fs.S3FileSystem(**s3_options), s3_bucket


def test_forget_leaves_nothing_of_the_namespace_anywhere(
    s3_env: tuple[Settings, s3fs.S3FileSystem, str], tmp_path: Path
) -> None:
    settings, fs, bucket = s3_env
    since = scan.prefect_now()
    inbox = write_inbox(
        tmp_path / "inbox",
        [
            (f"sess-{IDS}-1", GONE, ("Quokkaberry", "Zephyrine"), DAY),
            ("keep-1", KEEP, ("Gooseberry", "Bartholomew"), DAY),
        ],
    )
    queue(settings, GONE, f"sess-{IDS}-1", others=True)
    run_every_flow(settings, inbox, DAY + timedelta(days=400))
    needles = scan.Needles(*CONTENT, IDS, NAME)
    before = everything(settings, fs, bucket, needles)
    # Each kind of place held some of it: the scans can see.
    for place, detail in (
        ("row of long_term_entries", ""),
        ("row of memory_access_daily", ""),
        ("row of document_chunks", ""),
        ("row of documents", "handbook"),
        ("row of namespace_terms", ""),  # the index step's counts of words
        ("row of namespace_chunk_terms", ""),
        ("pg_stats of chat_messages", ""),
        ("file of memories", ""),
        ("object", f"{bucket}/cold/memories/"),
        ("file", "/MEMORY.md"),
        ("prefect flow_run", ""),  # the tidy's parameter
    ):
        assert any(h.place == place and detail in h.detail for h in before), (place, before)

    memory_forget(namespace=GONE, confirm=True, full_vacuum=True)

    scan.wait_for_prefect(since)
    left = [hit for hit in everything(settings, fs, bucket, needles) if not kept_by_design(hit)]
    assert left == [], "\n".join(map(str, left))
    with open_store(settings).engine.connect() as conn:
        kept = conn.execute(
            text("SELECT count(*) FROM chat_sessions WHERE title ILIKE '%gooseberr%'")
        ).scalar_one()
    assert kept == 1 and fs.find(f"{bucket}/cold/memories/namespace={KEEP}")  # the other stays


def kept_by_design(hit: scan.Hit) -> bool:
    """The audit log's record of the forget keeps the namespace's name, and nothing else:
    its row, and its table's and indexes' pages (and statistics, should they be taken)."""
    places = ("row of audit_log", "file of audit_log", "pg_stats of audit_log")
    forget_row = hit.place != "row of audit_log" or ",forget," in hit.detail
    return hit.place in places and hit.found == (NAME,) and forget_row


def tidied_session_with_a_later_state(settings: Settings, tmp_path: Path) -> None:
    """One session to purge, synced, tidied (MEMORY.md, weekly, logs archived) and then
    continued (a later state); an older one, compressed and archived; one to keep."""
    purged = f"sess-{IDS}-p"
    words = ("Quokkaberry", "Zephyrine")
    old = write_inbox(tmp_path / "old", [(f"sess-{IDS}-old", KEEP, words, LONG_AGO)])
    memory_sync_daily(as_of=LONG_AGO.replace(hour=23), transcripts_url=str(old))
    inbox = write_inbox(
        tmp_path / "inbox",
        [(purged, KEEP, words, DAY), ("keep-1", KEEP, ("Gooseberry", "Bartholomew"), DAY)],
    )
    queue(settings, KEEP, purged, others=False)
    run_every_flow(settings, inbox, SUNDAY + timedelta(days=1))
    later = SUNDAY + timedelta(days=1)  # the session goes on after the tidy
    folder = tmp_path / "later"
    folder.mkdir()
    more = transcript(purged, KEEP, words, later, part="later-")
    (folder / "chat-p.jsonl").write_text("\n".join(more) + "\n")
    memory_sync_daily(as_of=later.replace(hour=23), transcripts_url=str(folder))


def test_purge_leaves_nothing_of_the_session_anywhere(
    s3_env: tuple[Settings, s3fs.S3FileSystem, str], tmp_path: Path
) -> None:
    settings, fs, bucket = s3_env
    since = scan.prefect_now()
    tidied_session_with_a_later_state(settings, tmp_path)
    needles = scan.Needles(*CONTENT, IDS)
    before = everything(settings, fs, bucket, needles)
    for place, detail in (
        ("row of long_term_entries", ""),
        ("row of memory_write_queue", ""),
        ("pg_stats of chat_messages", ""),
        ("file of chat_messages", ""),
        ("object", f"{bucket}/cold/transcripts/"),
        ("object", f"{bucket}/cold/memories/"),
        ("file", "/MEMORY.md"),
        ("file", "/memory/weekly/"),
        ("file", "/memory/archive/2026/"),
    ):
        assert any(h.place == place and detail in h.detail for h in before), (place, before)
    store = open_store(settings)
    assert searched(store)

    for sid in (f"sess-{IDS}-p", f"sess-{IDS}-old"):
        purge_session(
            store.engine,
            open_cold_store(settings),
            open_memory_root(settings),
            sid,
            actor="test",
            full_vacuum=True,
            as_of=SUNDAY + timedelta(days=2),
        )

    scan.wait_for_prefect(since)
    left = everything(settings, fs, bucket, needles)
    assert left == [], "\n".join(map(str, left))
    assert not searched(store)
    memory_md = (Path(settings.memory_root_url) / KEEP / "MEMORY.md").read_text()
    assert "Gooseberry" in memory_md or "Bartholomew" in memory_md


def searched(store: Store) -> list[str]:
    """What a search of the namespace returns of the purged text."""
    retriever = Retriever(store.engine, HashingEmbedder(store.settings.embedding.dim))
    hits = retriever.search(KEEP, "Quokkaberry Zephyrine planting jam", as_of=SUNDAY, limit=50)
    return [h.content for h in hits if any(m in h.content.casefold() for m in CONTENT)]


def test_docs_purge_leaves_no_row_of_a_document_added_through_the_queue(
    flow_env: Settings,
) -> None:
    """``docs purge`` of a document the HTTP API or MCP added erases its rows, its chunks and
    the queued copy of its text (rows: the pages go at the next VACUUM, as for any delete),
    and nothing of a look-alike namespace's document of the same name."""
    store = open_store(flow_env)
    with Session(store.engine) as session, session.begin():
        for namespace in (KEEP, f"{KEEP}s"):
            enqueue(session, namespace, "ADD_DOCUMENT", document(), now=DAY, settings=flow_env)
    memory_queue_drain(as_of=DAY.replace(hour=23, minute=30))
    index_every_namespace(store)
    needles = scan.Needles(*CONTENT, IDS)
    with store.engine.connect() as conn:
        mine = conn.execute(
            text("SELECT id FROM documents WHERE namespace = :ns"), {"ns": KEEP}
        ).scalar_one()
    before = {h.place for h in scan.store_rows(store.engine, needles)}
    assert {
        "row of documents",
        "row of document_chunks",
        "row of memory_write_queue",
        "row of namespace_chunk_terms",  # the index step's counts of its words
    } <= before
    assert searched(store)

    purge_documents(store.engine, KEEP, document_id=mine, actor="test")

    left = [h for h in scan.store_rows(store.engine, needles) if f"{KEEP}s" not in h.detail]
    assert left == [], "\n".join(map(str, left))
    assert not searched(store)
    with store.engine.connect() as conn:
        kept = conn.execute(
            text("SELECT count(*) FROM document_chunks WHERE namespace = :ns"), {"ns": f"{KEEP}s"}
        ).scalar_one()
    assert kept > 0
