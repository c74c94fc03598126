"""The first wall alone: with row-level security off, every MemoryService path still keeps
to the grant's namespace (look-alike namespaces beside it)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from serving import MemoryService, NotFound
from storage import queue
from storage.kernel.settings import Settings
from storage.keys import Grant
from storage.server.engine import Store
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def service(settings: Settings, store: Store) -> MemoryService:
    serving = settings.serving.model_copy(update={"row_level_security": False})
    return MemoryService.open(settings.model_copy(update={"serving": serving}))


def test_without_rls_every_path_keeps_to_the_grants_namespace(
    service: MemoryService, store: Store
) -> None:
    with service.engine.connect() as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == "postgres"
    mine = put(store, "alice", ["the dentist is on Friday"], AT)
    theirs = put(store, "alice2", ["the dentist of alice2"], AT) + put(
        store, "Alice", ["the dentist of Alice"], AT
    )
    with Session(store.engine) as session, session.begin():
        queue.enqueue(session, "alice2", "ADD_MEMORY", {"content": "queued for alice2"})
    alice = Grant(key_id=None, namespace="alice", read_only=False)

    hits = service.search(alice, "dentist", limit=10)
    primed = service.prime(alice, "the dentist?")
    shown = [service.ids.show("memory", real) for real in mine]
    assert [c.hit.memory_id for c in hits] == shown
    assert [f["memory_id"] for f in primed["facts"]] == shown
    assert service.queue_stats(alice)["pending"] == 0
    for other in [service.ids.show("memory", real) for real in theirs]:
        for call in (service.get, service.forget):
            with pytest.raises(NotFound):
                call(alice, other)
        with pytest.raises(NotFound):
            service.set_pinned(alice, other, pinned=True)
    with store.engine.connect() as conn:
        left = conn.execute(
            text("SELECT count(*) FROM memories WHERE id = ANY(:ids) AND NOT pinned"),
            {"ids": theirs},
        ).scalar()
    assert left == len(theirs)
    assert service.forget(alice, shown[0]) == {"memory_id": shown[0], "deleted": True}
