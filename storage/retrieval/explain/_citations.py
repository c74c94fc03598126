"""Labelled citations for retrieval output: ``[Memory n]`` and ``[Doc n]``, each with its
provenance, and one closing ``Sources:`` line.

    cited = cite(retriever.search("alice", "when is the dentist?"))
    print(render_citations(cited))
    # [Memory 1] Dentist appointment moved to Tuesday 9am
    #
    # Sources: [Memory 1] memory 42 (session s7, messages m3, 2026-11-20 12:00 UTC)

Labels number hits in the order given, which for ``search()`` is its ranking (ties already
broken there: newer first, then the lower id), so the same hits give the same labels on
every call. A ``CitationBook`` kept for a conversation goes further: an id cited before
keeps its label, and new ids are numbered after the last, so a later search does not
relabel ``[Memory 2]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC

from storage.retrieval._types import DOC_KIND, Hit

MAX_MESSAGES = 3  # message ids shown per source; the rest are counted


@dataclass(frozen=True)
class Citation:
    """One cited hit: its label, the hit, and where it came from as short text."""

    label: str
    hit: Hit
    provenance: str

    @property
    def line(self) -> str:
        """The label and the hit's passage (``Hit.shown``) on one line."""
        return f"{self.label} {' '.join(self.hit.shown.split())}"


class CitationBook:
    """The labels of one conversation: an id cited before keeps its label, new ids number on."""

    def __init__(self) -> None:
        self._labels: dict[tuple[str, int], str] = {}
        self._counts: dict[str, int] = {}

    def cite(self, hits: Iterable[Hit]) -> list[Citation]:
        """Each hit with its label, in the order given (a search's rank order)."""
        return [Citation(self.label(hit), hit, provenance(hit)) for hit in hits]

    def label(self, hit: Hit) -> str:
        """The hit's label in this conversation, given it now if it has none yet."""
        noun = "Doc" if hit.kind == DOC_KIND else "Memory"
        key = (noun, hit.ref[1])
        if key not in self._labels:
            self._counts[noun] = self._counts.get(noun, 0) + 1
            self._labels[key] = f"[{noun} {self._counts[noun]}]"
        return self._labels[key]

    def __len__(self) -> int:
        return len(self._labels)


def cite(hits: Iterable[Hit]) -> list[Citation]:
    """Label ``hits`` from 1, in the order given: the same hits, the same labels."""
    return CitationBook().cite(hits)


def provenance(hit: Hit) -> str:
    """Where a hit came from, compactly: ids, session, messages and time."""
    if hit.kind == DOC_KIND:
        return doc_provenance(hit)
    return memory_provenance(hit)


def short_provenance(hit: Hit) -> str:
    """Where a hit came from in as few tokens as still find it: ``memory 42, 2026-11-20``,
    ``doc 7 chunk 31``. What a context within a token budget cites (``_budget``); the
    hits themselves carry the rest."""
    if hit.kind == DOC_KIND:
        return (
            f"doc {hit.doc.document_id} chunk {hit.doc.chunk_id}"
            if hit.doc
            else f"chunk {hit.ref[1]}"
        )
    return f"memory {hit.memory_id}, {hit.occurred_at.astimezone(UTC):%Y-%m-%d}"


def memory_provenance(hit: Hit) -> str:
    """``memory 42 (session s7, messages m3 m4, 2026-11-20 12:00 UTC)``."""
    parts: list[str] = []
    if hit.session_id:
        parts.append(f"session {hit.session_id}")
    if hit.message_ids:
        shown = " ".join(hit.message_ids[:MAX_MESSAGES])
        more = len(hit.message_ids) - MAX_MESSAGES
        parts.append(f"messages {shown}" + (f" +{more} more" if more > 0 else ""))
    if hit.sources:
        parts.append("from memories " + " ".join(str(i) for i in hit.sources))
    parts.append(f"{hit.occurred_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC")
    return f"memory {hit.memory_id} ({', '.join(parts)})"


def doc_provenance(hit: Hit) -> str:
    """``doc 7 "Handbook" § Travel, handbook.md chars 120-480 (chunk 31, tag hr)``: the
    document, its title, the heading the chunk sits under, the source and the span."""
    doc = hit.doc
    if doc is None:  # a hit of kind doc built without its source (not from search)
        return f"chunk {hit.ref[1]}"
    under = f" § {doc.heading}" if doc.heading and doc.heading != doc.title else ""
    tag = f", tag {doc.tag}" if doc.tag else ""
    return (
        f'doc {doc.document_id} "{doc.title}"{under}, {doc.uri} '
        f"chars {doc.char_start}-{doc.char_end} (chunk {doc.chunk_id}{tag})"
    )


def source_entries(citations: Sequence[Citation]) -> list[str]:
    """``[Memory 1] memory 42 (...)`` per label, each label once, in order."""
    return list({c.label: f"{c.label} {c.provenance}" for c in citations}.values())


def sources_line(citations: Sequence[Citation]) -> str:
    """``Sources: [Memory 1] ...; [Doc 1] ...``, each label once; empty with no citations."""
    entries = source_entries(citations)
    return "Sources: " + "; ".join(entries) if entries else ""


def render_citations(citations: Sequence[Citation]) -> str:
    """One labelled line per hit, a blank line, then the ``Sources:`` line."""
    if not citations:
        return ""
    return "\n".join([*(c.line for c in citations), "", sources_line(citations)])
