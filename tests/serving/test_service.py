"""The first wall alone: with row-level security off, every MemoryService path still keeps
to the grant's namespace (look-alike namespaces beside it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from serving import Forbidden, KeyFor, MemoryService, NotFound, Unauthorized
from storage import queue
from storage.embedding import Embedder
from storage.kernel.settings import Settings
from storage.keys import PREFIX, Grant, create_key, revoke_key
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


def test_a_search_checks_its_key_before_it_embeds_the_query(
    service: MemoryService, store: Store
) -> None:
    """The key is checked in the search's first round trip, with its first statement
    (``Retriever.search_checked``): an unknown, revoked or other namespace's key is refused
    before the query is embedded, and a valid one searches as before."""
    mine = put(store, "alice", ["the dentist is on Friday"], AT)
    put(store, "alice2", ["the dentist of alice2"], AT)
    with Session(store.engine) as session, session.begin():
        key = create_key(session, "alice")[1]
        other = create_key(session, "alice2")[1]
        revoked_id, revoked = create_key(session, "alice")
        revoke_key(session, revoked_id, AT)
    embedder = service.retriever.embedder
    asked: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(embedder, name)

        def embed_query(self, query: str) -> Any:
            asked.append(query)
            return embedder.embed_query(query)

    service.retriever.embedder = cast(Embedder, Counting())
    for unknown in (revoked, PREFIX + "0" * 43):
        with pytest.raises(Unauthorized):
            service.search(KeyFor(unknown, "alice"), "dentist")
    with pytest.raises(Forbidden):
        service.search(KeyFor(other, "alice"), "dentist")
    assert asked == []
    hits = service.search(KeyFor(key, "alice"), "dentist")
    assert asked == ["dentist"]
    assert [c.hit.memory_id for c in hits] == [service.ids.show("memory", mine[0])]
