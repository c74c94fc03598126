"""Namespaces are lowercase at every door: ``ALICE`` and ``alice`` would share one memory
folder on a filesystem that ignores case, so ``ALICE`` is refused wherever a namespace
enters, and ``alice`` is taken."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError
from sqlalchemy.orm import Session

from storage import queue
from storage.kernel.errors import InputError, RetrievalError
from storage.kernel.records import SessionRecord
from storage.keys import create_key
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.documents import check_names

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def session_line(namespace: str) -> SessionRecord:
    return SessionRecord(id="s1", namespace=namespace, agent="aria", kind="direct")


@pytest.mark.parametrize("namespace", ["ALICE", "Alice", "aLICE", "Team-Atlas"])
def test_a_namespace_with_a_capital_is_refused_at_every_door(store: Store, namespace: str) -> None:
    retriever = Retriever.from_settings(store.settings)
    with pytest.raises(ValidationError, match="namespace"):
        session_line(namespace)  # transcripts and the messages table
    with Session(store.engine) as session, session.begin():
        with pytest.raises(InputError, match="namespace"):
            queue.enqueue(session, namespace, "ADD_MEMORY", {"content": "x"})
        with pytest.raises(InputError, match="lowercase"):
            create_key(session, namespace)
    with pytest.raises(RetrievalError, match="lowercase"):
        retriever.search(namespace, "x", as_of=AT)
    with pytest.raises(RetrievalError, match="lowercase"):
        retriever.prime(namespace, as_of=AT)
    with pytest.raises(InputError, match="lowercase"):
        check_names(namespace, None)


def test_a_lowercase_namespace_is_taken(store: Store) -> None:
    assert session_line("team-atlas.v2_1").namespace == "team-atlas.v2_1"
    with Session(store.engine) as session, session.begin():
        assert queue.enqueue(session, "alice", "ADD_MEMORY", {"content": "x"}).id > 0
        assert create_key(session, "alice")[0] > 0
    assert Retriever.from_settings(store.settings).search("alice", "x", as_of=AT) == []
