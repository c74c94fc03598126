"""Shared set-up of the ageing and privacy tests: old sessions, old memories, the archive."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fsspec.implementations.local import LocalFileSystem
from sqlalchemy import text

from storage.server.engine import Store
from tasks.aging import ColdStore
from tests.helpers import add_session, chat, run_sync

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
LONG_AGO = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)  # 620 days before AS_OF
MONTHS_AGO = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)  # 172 days before AS_OF
RECENTLY = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)

TRIP = (
    "I need to book flights to Lisbon for the conference in March.",
    "Sure. TAP has a direct flight on Friday morning and Iberia one via Madrid.",
    "I prefer window seats. Let's go with the TAP one on Friday.",
    "Booked the TAP flight on Friday, window seat 14A.",
)
DENTIST = (
    "Remind me about the dentist appointment with Dr. Okafor next Tuesday.",
    "Noted: dentist, Dr. Okafor, Tuesday at 10:00.",
    "Also I want to ask about the whitening treatment there.",
    "I'll add the whitening question to the reminder.",
)


def synced_session(
    store: Store, session_id: str, namespace: str, start: datetime, texts: tuple[str, ...] = TRIP
) -> None:
    """A session recorded and processed by the daily sync on its own day."""
    add_session(store, session_id, namespace, chat(start, *texts), title=f"talk {session_id}")
    run_sync(store, start.replace(hour=23, minute=0), namespace=namespace)


def local_cold(tmp_path: Path) -> ColdStore:
    return ColdStore(LocalFileSystem(), str(tmp_path / "archive"))


def s3_cold(s3_options: dict[str, object], bucket: str) -> ColdStore:
    import s3fs

    return ColdStore(s3fs.S3FileSystem(**s3_options), f"{bucket}/archive")


def scalar(store: Store, sql: str, **params: Any) -> Any:
    with store.engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def column(store: Store, sql: str, **params: Any) -> list[Any]:
    with store.engine.connect() as conn:
        return list(conn.execute(text(sql), params).scalars())


def days_before(moment: datetime, days: float) -> datetime:
    return moment - timedelta(days=days)
