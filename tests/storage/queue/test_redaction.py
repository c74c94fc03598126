"""With redaction before storage, a queued write is stored with placeholders, not values."""

from __future__ import annotations

from storage.kernel.settings import RedactionSettings, Settings
from storage.queue import parse_stored
from storage.server.engine import Store
from tests.storage.queue.test_table import MESSAGE, SESSION, T, claim, put, row

BEFORE = Settings(redaction=RedactionSettings(before_storage=True))
TEXT = "Alice: alice@example.com, +49 30 12345678; again alice@example.com"


def test_a_memory_and_a_message_are_queued_redacted(store: Store) -> None:
    [memory] = put(store, {"content": TEXT}, settings=BEFORE)
    session = SESSION | {"title": "Call with bob@example.com"}
    [message] = put(
        store,
        {"session": session, "message": MESSAGE | {"content": TEXT}},
        op="RECORD_MESSAGE",
        settings=BEFORE,
    )

    assert (
        row(store, memory)["payload"]["content"] == "Alice: <EMAIL_1>, <PHONE_1>; again <EMAIL_1>"
    )
    stored = row(store, message)["payload"]
    assert stored["message"]["content"] == "Alice: <EMAIL_1>, <PHONE_1>; again <EMAIL_1>"
    assert stored["session"]["title"] == "Call with <EMAIL_2>"
    assert "example.com" not in str(row(store, memory)) + str(row(store, message))
    # What a worker claims still validates as its operation's payload.
    items = claim(store, T)
    assert [i.op for i in items] == ["ADD_MEMORY", "RECORD_MESSAGE"]
    assert parse_stored(items[0].op, items[0].payload).content.endswith("again <EMAIL_1>")  # type: ignore[union-attr]


def test_without_before_storage_the_queue_keeps_the_text(store: Store) -> None:
    [plain] = put(store, {"content": TEXT}, settings=Settings())
    [unset] = put(store, {"content": TEXT})
    assert row(store, plain)["payload"]["content"] == TEXT
    assert row(store, unset)["payload"]["content"] == TEXT
