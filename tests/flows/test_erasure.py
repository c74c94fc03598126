"""Forget erases a namespace's content everywhere it went: store, files, bucket and Prefect.

Every flow runs for real (sync with transcripts, summaries, tidy, queue drain, ageing into
an S3 archive, quality, watchdog), then ``memory-forget``. A scan looks for two marker
words of alice's conversations in every table of the store (each row as text, stems of
the full-text index included), every file under the data dir and the memory root, every
object in the bucket, and every table of the Prefect database.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import s3fs
from prefect.settings import get_current_settings
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from flows.aging import memory_aging
from flows.daily_sync import memory_sync_daily
from flows.forget import memory_forget
from flows.quality_report import memory_quality_report
from flows.queue_drain import memory_queue_drain
from flows.session_summaries import memory_session_summaries
from flows.watchdog import memory_cron_watchdog
from flows.weekly_tidy import memory_weekly_tidy
from storage.config import Settings
from storage.engine import open_store
from storage.queue import enqueue

MARKERS = ("quokkaberr", "zephyrin")  # stems: the full-text index keeps "quokkaberri"
DAY = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
SUNDAY = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)


def _lines(sid: str, namespace: str, words: tuple[str, str], bad: bool) -> list[str]:
    fruit, name = words
    head = {"type": "session", "id": sid, "namespace": namespace, "agent": "aria"}
    says = [
        ("user", f"I want to plant {fruit} bushes with {name} on Friday in Porto."),
        ("assistant", f"Good idea: {fruit} likes sun. {name} can water them."),
        ("user", f"Let's go with the {fruit} plan. I prefer {name} to lead it."),
        ("assistant", f"Noted: {name} leads the {fruit} planting."),
    ]
    rows = [json.dumps({"type": "session", "title": f"{fruit} garden with {name}"} | head)]
    for i, (role, content) in enumerate(says):
        at = (DAY + timedelta(minutes=2 * i)).isoformat()
        msg = {"type": "message", "id": f"m{i}", "role": role, "content": content}
        rows.append(json.dumps(msg | {"speaker": role, "timestamp": at}))
    if bad:  # a bad line whose refused value is content: the report must not quote it
        rows.append(json.dumps({"type": "message", "id": "x", "role": f"{fruit} {name}"}))
    return rows


def seed_transcripts(inbox: Path) -> None:
    inbox.mkdir(parents=True)
    alice = _lines("a1", "alice", ("Quokkaberry", "Zephyrine"), bad=True)
    bob = _lines("b1", "bob", ("Gooseberry", "Bartholomew"), bad=False)
    (inbox / "a1.jsonl").write_text("\n".join(alice) + "\n")
    (inbox / "b1.jsonl").write_text("\n".join(bob) + "\n")


def run_every_flow(settings: Settings, inbox: Path) -> None:
    memory_sync_daily(as_of=DAY.replace(hour=23), transcripts_url=str(inbox))
    memory_session_summaries(as_of=DAY.replace(hour=23))
    store = open_store(settings)
    with Session(store.engine) as session, session.begin():
        note = {"content": "Quokkaberry jam recipe from Zephyrine", "kind": "note"}
        enqueue(session, "alice", "ADD_MEMORY", note, idempotency_key="jam", now=DAY)
    memory_queue_drain(as_of=DAY.replace(hour=23, minute=30))
    memory_weekly_tidy(as_of=SUNDAY)
    memory_quality_report(as_of=SUNDAY, fail_on_critical=False)
    memory_cron_watchdog(as_of=SUNDAY, deployments=[])
    memory_aging(as_of=DAY + timedelta(days=400))


def store_hits(settings: Settings) -> list[str]:
    """``table: row`` for every row of the store whose text holds a marker."""
    store = open_store(settings)
    hits: list[str] = []
    with store.engine.connect() as conn:
        tables = conn.execute(
            text(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        ).scalars()
        for table in list(tables):
            rows = conn.execute(text(f'SELECT t::text FROM "{table}" AS t')).scalars()
            hits += [f"{table}: {row[:120]}" for row in rows if _holds(row)]
    return hits


def _holds(value: str) -> bool:
    folded = value.casefold()
    return any(marker in folded for marker in MARKERS)


def _readable(name: str, data: bytes) -> str:
    if name.endswith(".parquet"):
        return str(pq.read_table(io.BytesIO(data)).to_pylist())
    return data.decode("utf-8", "replace")


def file_hits(*roots: Path) -> list[str]:
    files: Iterator[Path] = (p for root in roots for p in root.rglob("*") if p.is_file())
    return [str(p) for p in files if _holds(_readable(p.name, p.read_bytes()))]


def bucket_hits(fs: s3fs.S3FileSystem, bucket: str) -> list[str]:
    return [key for key in fs.find(bucket) if _holds(_readable(key, fs.cat_file(key)))]


def prefect_hits() -> list[str]:
    """Every row of every table of the Prefect database (the harness's SQLite file)."""
    configured = get_current_settings().server.database.connection_url
    assert configured is not None
    url = make_url(configured.get_secret_value())
    assert url.database, url
    hits: list[str] = []
    with sqlite3.connect(url.database) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            rows = db.execute(f'SELECT * FROM "{name}"').fetchall()
            hits += [f"{name}: {str(row)[:160]}" for row in rows if _holds(str(row))]
    return hits


def everything(settings: Settings, fs: s3fs.S3FileSystem, bucket: str) -> list[str]:
    return (
        store_hits(settings)
        + file_hits(settings.data_dir, Path(settings.memory_root_url))
        + bucket_hits(fs, bucket)
        + prefect_hits()
    )


def test_forget_leaves_no_content_anywhere(
    flow_env: Settings,
    s3_bucket: str,
    s3_options: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ARCHIVIST_AGING__ARCHIVE_URL", f"s3://{s3_bucket}/cold")
    monkeypatch.setenv("ARCHIVIST_STORAGE_OPTIONS", json.dumps(s3_options))
    settings = Settings()
    fs = s3fs.S3FileSystem(**s3_options)
    seed_transcripts(tmp_path / "inbox")
    run_every_flow(settings, tmp_path / "inbox")
    before = everything(settings, fs, s3_bucket)
    assert any(hit.startswith("long_term_entries") for hit in before), before
    assert any(hit.startswith(f"{s3_bucket}/cold/memories") for hit in before), before

    memory_forget(namespace="alice", confirm=True)

    left = everything(settings, fs, s3_bucket)
    print("\n".join(left))
    assert left == []
    with open_store(settings).engine.connect() as conn:
        kept = conn.execute(
            text("SELECT count(*) FROM chat_sessions WHERE title ILIKE '%gooseberr%'")
        ).scalar_one()
    assert kept == 1 and fs.find(f"{s3_bucket}/cold/memories/namespace=bob")  # bob's stays
