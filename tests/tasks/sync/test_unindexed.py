"""What does not become searchable is decided and counted (issue 16): sessions, messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return MORNING + timedelta(minutes=minutes)


def memory_sessions(store: Store) -> dict[str, set[str]]:
    sql = "SELECT session_id, array_agg(DISTINCT kind) FROM memories GROUP BY 1"
    with store.engine.connect() as conn:
        return {sid: set(kinds) for sid, kinds in conn.execute(text(sql))}


def test_a_session_without_a_user_message_is_judged_by_its_assistant_messages(
    store: Store,
) -> None:
    briefing = [
        ("system", "Write the morning briefing for the ops team.", at(0)),
        ("assistant", "Overnight, the billing backup finished at 03:10 without errors.", at(1)),
        ("assistant", "The certificate for api.example.com expires on 2 December.", at(2)),
    ]
    add_session(store, "briefing", "ops", briefing, kind="subagent", agent="reporter")
    add_session(store, "greeting", "ops", [("assistant", "Hi! How can I help today?", at(0))])
    add_session(store, "tools", "ops", [("tool", "3 passed in 0.41s", at(0))])
    add_session(store, "blank", "ops", [("assistant", "  \n ", at(0)), ("tool", "ok", at(1))])
    add_session(store, "one-question", "ops", chat(MORNING, "What time is it in Tokyo?", "9pm."))

    daily = run_sync(store, AS_OF)

    assert [c.session_id for c in daily.plan.to_process] == ["briefing"]
    assert daily.plan.skipped_few_user_messages == ("one-question",)
    assert daily.plan.skipped_no_user_message == ("blank", "greeting", "tools")
    assert memory_sessions(store) == {"briefing": {"episode", "task_card", "turn"}}

    summaries = run_sync(store, AS_OF, min_user_messages=1)  # short sessions kept

    assert sorted(c.session_id for c in summaries.plan.to_process) == [
        "greeting",
        "one-question",
    ]
    assert summaries.plan.skipped_no_user_message == ("blank", "tools")
    assert set(memory_sessions(store)) == {"briefing", "greeting", "one-question"}


def test_empty_and_too_short_messages_are_counted_never_quoted(store: Store) -> None:
    turns = [
        ("user", "Can you check why the nightly billing backup was slow?", at(0)),
        ("assistant", "", at(1)),
        ("user", "   \n\t ", at(2)),
        ("assistant", "It waited 40 minutes for a lock held by the vacuum job.", at(3)),
        ("tool", "", at(4)),
        ("user", "Bye!", at(5)),
        ("assistant", "👍", at(6)),
    ]
    add_session(store, "chat", "alice", turns)

    dry = run_sync(store, AS_OF, dry_run=True)
    written = run_sync(store, AS_OF)

    for outcome in (dry.written, written.written):
        assert (outcome.messages_empty, outcome.messages_too_short) == (3, 2)
    with store.engine.connect() as conn:
        turned = conn.execute(
            text("SELECT DISTINCT unnest(message_ids) FROM memories WHERE kind = 'turn'")
        ).scalars()
        assert sorted(turned) == ["m0", "m3"]
    assert "Bye" not in repr(written.written.__dict__)
