"""Pseudonyms: stable while the namespace exists, unlinkable once its key is gone."""

from __future__ import annotations

import re

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.records import NAMESPACE, SessionRecord
from storage.pseudonyms import UNKNOWN_SESSION, pseudonyms, reveal, session_pseudonym
from storage.server.engine import Store
from storage.sessions import record_session


def test_a_namespace_and_its_sessions_get_stable_distinct_pseudonyms(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        for sid, ns in (("s-1", "alice"), ("s-2", "bob")):
            record_session(session, SessionRecord(id=sid, namespace=ns, agent="aria"))
        first = pseudonyms(session, ["alice", "bob"], ["s-1", "s-2", "s-none"])
    with Session(store.engine) as session, session.begin():
        again = pseudonyms(session, ["alice"], ["s-1"])
        named = session_pseudonym(session, "alice", "s-1")

    alice, bob = first.namespaces["alice"], first.namespaces["bob"]
    assert re.fullmatch(r"ns:[0-9a-f]{12}", alice) and alice != bob
    assert not NAMESPACE.fullmatch(alice)  # never taken for a namespace name
    assert re.fullmatch(r"session:[0-9a-f]{12}", first.sessions["s-1"])
    assert again.namespaces["alice"] == alice and again.sessions["s-1"] == first.sessions["s-1"]
    assert named == first.session("s-1") != first.session("s-2")
    assert first.session("s-none") == UNKNOWN_SESSION  # not recorded: no namespace, no key
    assert first.path("alice/memory/2026-11-18.md") == f"{alice}/memory/2026-11-18.md"
    assert "alice" not in alice + first.sessions["s-1"]


def test_once_the_key_is_gone_a_pseudonym_leads_nowhere(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        before = pseudonyms(session, ["alice"]).namespaces["alice"]
        shown = reveal(session, f"tidy of {before}: 3 entries")
        session.execute(text("DELETE FROM pseudonym_keys WHERE namespace = 'alice'"))  # forget
        after_forget = reveal(session, f"tidy of {before}: 3 entries")
        fresh = pseudonyms(session, ["alice"]).namespaces["alice"]

    assert shown == f"tidy of {before} (alice): 3 entries"
    assert after_forget == f"tidy of {before}: 3 entries"
    assert fresh != before  # a namespace made again under that name is another one
