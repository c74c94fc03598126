"""Purge after a weekly tidy: every view that quoted the session is rebuilt or cleaned.

The session's text reached ``MEMORY.md`` (and its ``long_term`` memories, which search
returns), the weekly summary and, once the tidy moved it, the archived daily log. A later
state of the session replaced its first memories, so the long-term entries made from
those no longer share a memory id with it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.files import open_memory_root
from tasks.privacy import purge_session
from tasks.tidy import make_context, tidy_namespace
from tests.helpers import add_session, chat, run_sync
from tests.tasks.aging.helpers import local_cold

SUNDAY = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)
DAY = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
MARKERS = ("quokkaberr", "zephyrin", "zebrafog")
STALE = text(
    "SELECT count(*) FROM long_term_entries e "
    "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = ANY(e.memory_ids))"
)
PURGED = (
    "I want to plant Quokkaberry bushes with Zephyrine on Friday.",
    "Good idea: Quokkaberry likes sun. Zephyrine can water them.",
    "Let's go with the Quokkaberry plan. I prefer Zephyrine to lead it.",
    "Noted: Zephyrine leads the Quokkaberry planting.",
)
KEPT = (
    "I need to book flights to Lisbon for the conference in March.",
    "Sure. TAP has a direct flight on Friday morning.",
    "I prefer window seats. Let's go with the TAP one on Friday.",
    "Booked the TAP flight on Friday, window seat 14A.",
)


def holding(store: Store) -> list[str]:
    """Files under the memory root and rows of the store that quote the purged session."""
    root = Path(store.settings.memory_root_url)
    found = [str(p) for p in root.rglob("*") if p.is_file() and _quotes(p.read_text())]
    with store.engine.connect() as conn:
        for table in ("memories", "long_term_entries", "weekly_summaries", "episodes"):
            rows = conn.execute(text(f"SELECT t::text FROM {table} t")).scalars()
            found += [f"{table}: {row[:100]}" for row in rows if _quotes(row)]
    return found


def _quotes(value: str) -> bool:
    return any(marker in value.casefold() for marker in MARKERS)


def tidied_with_a_later_state(store: Store) -> None:
    """Both sessions synced and tidied (logs archived), then a later state of the purged."""
    add_session(store, "s-zebrafog", "alice", chat(DAY, *PURGED), title="Quokkaberry garden")
    add_session(store, "s-keep", "alice", chat(DAY + timedelta(hours=2), *KEPT), title="Trip")
    run_sync(store, DAY.replace(hour=23))
    embedder = HashingEmbedder(store.settings.embedding.dim)
    ctx = make_context(store.settings, embedder, SUNDAY)
    tidy_namespace(store.engine, open_memory_root(store.settings), ctx, "alice")
    later = DAY + timedelta(days=6)  # after the tidy: the session goes on
    more = chat(later, "Zephyrine wants Quokkaberry jam too.", "Noted, jam as well.")
    add_session(store, "s-zebrafog", "alice", more, title="Quokkaberry garden", first_index=4)
    run_sync(store, later.replace(hour=23))


def test_purge_after_tidy_leaves_the_session_in_no_view(store: Store, tmp_path: Path) -> None:
    tidied_with_a_later_state(store)
    root = Path(store.settings.memory_root_url) / "alice"
    before = holding(store)
    assert any(p.endswith("alice/MEMORY.md") for p in before), before
    assert any("/memory/weekly/" in p for p in before) and any(
        "/archive/2026/" in p for p in before
    )
    assert any(p.startswith("long_term_entries") for p in before)
    with store.engine.connect() as conn:  # the later state replaced memories entries cite
        assert conn.execute(STALE).scalar_one() > 0

    counts = purge_session(
        store.engine,
        local_cold(tmp_path),
        open_memory_root(store.settings),
        "s-zebrafog",
        actor="t",
    )

    assert holding(store) == []
    assert counts["long_term_entries"] > 0 and counts["views_rebuilt"] >= 2
    hits = Retriever(store.engine, HashingEmbedder(store.settings.embedding.dim)).search(
        "alice", "Quokkaberry Zephyrine planting", as_of=SUNDAY
    )
    assert all(not _quotes(h.content) for h in hits)
    memory_md = (root / "MEMORY.md").read_text()
    assert "TAP" in memory_md and "# Long-term memory · alice" in memory_md
    weekly = (root / "memory/weekly/2026-11-16.md").read_text()
    assert "Conversations: 1 " in weekly and "TAP" in weekly
    archived = (root / "memory/archive/2026/2026-11-18.md").read_text()
    assert "s-keep@" in archived and "Trip" in archived
