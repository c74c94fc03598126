"""Hits, primings and rows as JSON-ready dicts, with the provenance an assistant cites: each
hit's label (``[Memory 1]``, ``[Doc 1]``) and a closing ``sources`` line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from storage.retrieval import Citation, Context, Hit, Priming, cite, sources_line


def hit_view(hit: Hit, *, explain: bool = False) -> dict[str, Any]:
    """One search result: the part of the memory that answers the query (``passage``), the
    whole memory (``content``), its score and where it came from; with ``explain``,
    the score's factors, their weights and the breakdown as text (``Hit.explain``).

    A document chunk (kind ``"doc"``) has no ``memory_id`` (null: no memory call takes it)
    and a ``doc`` object: document and chunk ids, source URI, title, tag, heading, span."""
    view: dict[str, Any] = {
        "memory_id": None if hit.doc is not None else hit.memory_id,
        "kind": hit.kind,
        "passage": hit.shown,
        "content": hit.content,
        "score": round(hit.score, 4),
        "low_confidence": hit.low_confidence,
        "tier": hit.tier,
        "session_id": hit.session_id,
        "message_ids": list(hit.message_ids),
        "occurred_at": hit.occurred_at.isoformat(),
        "created_at": hit.created_at.isoformat(),
        "sources": list(hit.sources),
    }
    if hit.doc is not None:
        view["doc"] = dict(hit.doc.__dict__)
    if explain:
        view |= {"factors": hit.factors, "weights": hit.weights, "explain": hit.explain()}
    return view


def cited_view(citation: Citation, *, explain: bool = False) -> dict[str, Any]:
    """One search result headed by its label."""
    return {"label": citation.label} | hit_view(citation.hit, explain=explain)


def search_view(
    namespace: str, citations: Sequence[Citation], *, explain: bool = False
) -> dict[str, Any]:
    """A search's labelled hits and its ``Sources:`` line ("" with no hits)."""
    return {
        "namespace": namespace,
        "hits": [cited_view(c, explain=explain) for c in citations],
        "sources": sources_line(citations),
    }


def context_view(namespace: str, context: Context, *, explain: bool = False) -> dict[str, Any]:
    """A budgeted search: the labelled hits that fit, ``sources``, the ``context`` text an
    assistant is handed, and ``tokens_used`` of ``budget_tokens`` (the local model's
    tokenizer); ``left_out``: hits that did not fit or repeated a kept one."""
    return search_view(namespace, context.citations, explain=explain) | {
        "context": context.text,
        "budget_tokens": context.budget_tokens,
        "tokens_used": context.tokens_used,
        "left_out": context.left_out,
    }


def priming_view(priming: Priming) -> dict[str, Any]:
    """A priming's parts, its facts labelled as in its text, and the text itself."""
    facts = cite(priming.facts)  # the labels ``formatted`` shows: same facts, same labels
    return json_row(
        {
            "namespace": priming.namespace,
            "formatted": priming.formatted,
            "facts": [cited_view(c) for c in facts],
            "sources": sources_line(facts),
            "episodes": [e.__dict__ for e in priming.episodes],
            "open_threads": [t.__dict__ for t in priming.open_threads],
            "entities": list(priming.entities),
            "budget_tokens": priming.budget_tokens,
            "tokens_used": priming.tokens_used,
        }
    )


def json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row or a dict with JSON-ready values."""
    return {str(k): jsonable(v) for k, v in row.items()}


def jsonable(value: Any) -> Any:
    """Datetimes as ISO text, tuples as lists, all the way down."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
