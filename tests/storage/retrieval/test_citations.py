"""Citations: [Memory n] and [Doc n] labels with provenance, a closing Sources: line, labels
that stay put across calls and, in a CitationBook, across a conversation."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import (
    CitationBook,
    DocSource,
    Hit,
    Retriever,
    cite,
    render_citations,
    sources_line,
)
from storage.server.engine import Store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def hit(
    memory_id: int,
    kind: str = "fact",
    *,
    content: str = "",
    session: str | None = None,
    messages: tuple[str, ...] = (),
    at: datetime = NOW,
    sources: tuple[int, ...] = (),
) -> Hit:
    return Hit(
        memory_id=memory_id,
        namespace="alice",
        kind=kind,
        content=content or f"memory {memory_id}",
        score=0.5,
        factors={},
        weights={},
        occurred_at=at,
        created_at=at,
        session_id=session,
        message_ids=messages,
        tier="fresh",
        sources=sources,
    )


def test_memories_and_documents_are_labelled_with_their_provenance_and_sources() -> None:
    berlin = timezone(timedelta(hours=1))
    hits = [
        hit(42, content="Dentist moved to\n Tuesday 9am", session="s7", messages=("m3", "m4")),
        hit(7, "doc", content="Section 2: refunds within 30 days"),
        hit(9, "episode", session="s2", messages=("m0", "m1", "m2", "m3", "m4")),
        hit(3, "long_term", at=datetime(2026, 11, 19, 9, 30, tzinfo=berlin), sources=(5, 6)),
        hit(8, "doc"),
    ]

    cited = cite(hits)

    assert [c.label for c in cited] == [
        "[Memory 1]",
        "[Doc 1]",
        "[Memory 2]",
        "[Memory 3]",
        "[Doc 2]",
    ]
    assert cited[0].line == "[Memory 1] Dentist moved to Tuesday 9am"
    assert cited[0].provenance == "memory 42 (session s7, messages m3 m4, 2026-11-20 12:00 UTC)"
    assert cited[1].provenance == "chunk 7"
    assert cited[2].provenance == (
        "memory 9 (session s2, messages m0 m1 m2 +2 more, 2026-11-20 12:00 UTC)"
    )
    assert cited[3].provenance == "memory 3 (from memories 5 6, 2026-11-19 08:30 UTC)"
    assert sources_line(cited) == (
        "Sources: [Memory 1] memory 42 (session s7, messages m3 m4, 2026-11-20 12:00 UTC); "
        "[Doc 1] chunk 7; "
        "[Memory 2] memory 9 (session s2, messages m0 m1 m2 +2 more, 2026-11-20 12:00 UTC); "
        "[Memory 3] memory 3 (from memories 5 6, 2026-11-19 08:30 UTC); [Doc 2] chunk 8"
    )
    text = render_citations(cited).splitlines()
    assert text[:2] == [
        "[Memory 1] Dentist moved to Tuesday 9am",
        "[Doc 1] Section 2: refunds within 30 days",
    ]
    assert text[-2:] == ["", sources_line(cited)]
    assert render_citations([]) == "" and sources_line([]) == ""


def test_the_same_hits_get_the_same_labels_and_a_repeated_id_its_first_label() -> None:
    hits = [hit(5), hit(2, "doc"), hit(5), hit(1)]

    first, second = cite(hits), cite(hits)

    assert [c.label for c in first] == ["[Memory 1]", "[Doc 1]", "[Memory 1]", "[Memory 2]"]
    assert first == second
    assert sources_line(first).count("[Memory 1]") == 1


def test_a_book_keeps_labels_across_a_conversation_and_numbers_new_ids_after_the_last() -> None:
    book = CitationBook()

    early = book.cite([hit(10), hit(20), hit(30, "doc")])
    later = book.cite([hit(40), hit(20), hit(31, "doc"), hit(30, "doc")])

    assert [c.label for c in early] == ["[Memory 1]", "[Memory 2]", "[Doc 1]"]
    assert [c.label for c in later] == ["[Memory 3]", "[Memory 2]", "[Doc 2]", "[Doc 1]"]
    assert len(book) == 5
    # A memory and a document chunk with the same id are different sources.
    assert book.label(hit(30)) == "[Memory 4]"


def test_labels_are_stable_across_two_real_searches_and_a_book_carries_them_on(
    store: Store,
) -> None:
    # Two texts twice: equal scores, whose order the ranking breaks by time, then id.
    ids = put(
        store,
        "alice",
        ["the dentist moved to Friday", "the dentist moved to Friday", "dentist bill paid"],
        NOW,
    ) + put(store, "alice", ["oat milk and dentist floss"], NOW - timedelta(days=3))
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())

    first = cite(retriever.search("alice", "dentist", as_of=NOW))
    second = cite(retriever.search("alice", "dentist", as_of=NOW))

    labels = {c.hit.memory_id: c.label for c in first}
    assert set(labels) == set(ids)
    assert labels == {c.hit.memory_id: c.label for c in second}
    assert sources_line(first) == sources_line(second)
    assert labels[ids[0]] < labels[ids[1]]  # the tie: the lower id first

    book = CitationBook()
    top = book.cite(retriever.search("alice", "dentist", limit=2, as_of=NOW))
    more = book.cite(retriever.search("alice", "oat milk floss", limit=4, as_of=NOW))
    again = {c.hit.memory_id: c.label for c in more}
    assert {c.hit.memory_id: c.label for c in top}.items() <= again.items()
    assert again[ids[3]] == "[Memory 3]"  # new to the conversation: after the last


def test_a_chunk_is_cited_by_its_document_heading_source_and_span() -> None:
    source = DocSource(
        document_id=7,
        chunk_id=31,
        uri="/kb/bike.md",
        title="Bicycle care",
        tag="home",
        heading="Chain",
        char_start=120,
        char_end=480,
    )
    under_title = replace(source, chunk_id=32, heading="Bicycle care", tag=None)
    hits = [replace(hit(31, "doc"), doc=source), replace(hit(32, "doc"), doc=under_title)]

    assert sources_line(cite(hits)) == (
        'Sources: [Doc 1] doc 7 "Bicycle care" § Chain, /kb/bike.md chars 120-480 '
        '(chunk 31, tag home); [Doc 2] doc 7 "Bicycle care", /kb/bike.md chars 120-480 '
        "(chunk 32)"
    )
