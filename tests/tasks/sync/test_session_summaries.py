"""Session summaries: idle sessions only, short ones too, never twice with the daily sync."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.server.engine import Store
from tests.helpers import add_session, chat, counts, files, run_sync, snapshot
from tests.tasks.sync.test_process import memory_root

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_only_sessions_idle_long_enough_are_summarised(store: Store) -> None:
    add_session(
        store, "quiet", "alice", chat(NOON - timedelta(minutes=50), "Book the dentist?", "Done.")
    )
    add_session(
        store,
        "busy",
        "alice",
        chat(NOON - timedelta(minutes=20), "Still typing...", "ok", "And another"),
    )

    result = run_sync(store, NOON, idle_minutes=30, min_user_messages=1)

    assert [c.session_id for c in result.plan.to_process] == ["quiet"]
    assert result.plan.still_active == ("busy",)
    later = run_sync(store, NOON + timedelta(minutes=30), idle_minutes=30, min_user_messages=1)
    assert [c.session_id for c in later.plan.to_process] == ["busy"]


def test_a_one_question_session_is_not_dropped(store: Store) -> None:
    add_session(
        store,
        "short",
        "alice",
        chat(NOON - timedelta(hours=1), "Remind me: passport expires in May.", "Noted."),
    )

    result = run_sync(store, NOON, idle_minutes=30, min_user_messages=1)

    assert result.written.sessions == 1
    assert "passport" in (memory_root(store) / "alice/memory/2026-11-20.md").read_text()


def test_summaries_then_daily_sync_write_each_state_once(store: Store) -> None:
    add_session(
        store,
        "s",
        "alice",
        chat(NOON - timedelta(hours=1), "Plan the launch?", "Yes.", "Go Friday."),
    )
    run_sync(store, NOON, idle_minutes=30, min_user_messages=1)
    before = (counts(store), snapshot(store), files(memory_root(store)))

    daily = run_sync(store, NOON.replace(hour=23))

    assert daily.plan.unchanged == ("s",) and daily.written.sessions == 0
    assert (counts(store), snapshot(store), files(memory_root(store))) == before


def test_daily_sync_then_summaries_write_each_state_once(store: Store) -> None:
    add_session(
        store,
        "s",
        "alice",
        chat(NOON - timedelta(hours=1), "Plan the launch?", "Yes.", "Go Friday."),
    )
    run_sync(store, NOON)
    before = (counts(store), snapshot(store), files(memory_root(store)))

    summaries = run_sync(store, NOON + timedelta(hours=1), idle_minutes=30, min_user_messages=1)

    assert summaries.plan.unchanged == ("s",) and summaries.written.sessions == 0
    assert (counts(store), snapshot(store), files(memory_root(store))) == before
