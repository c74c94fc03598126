"""Hits, primings and rows as JSON-ready dicts, with the provenance an assistant cites."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from storage.retrieval import Hit, Priming


def hit_view(hit: Hit, explain: bool = False) -> dict[str, Any]:
    """One search result: the memory, its score and where it came from; with ``explain``,
    the score's factors, their weights and the breakdown as text (``Hit.explain``).

    A document chunk (kind ``"doc"``) has no ``memory_id`` (null: no memory call takes it)
    and a ``doc`` object: document and chunk ids, source URI, title, tag, heading, span."""
    view: dict[str, Any] = {
        "memory_id": None if hit.doc is not None else hit.memory_id,
        "kind": hit.kind,
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


def priming_view(priming: Priming) -> dict[str, Any]:
    """A priming's parts, its facts with provenance, and its readable text."""
    return json_row(
        {
            "namespace": priming.namespace,
            "formatted": priming.formatted,
            "facts": [hit_view(h) for h in priming.facts],
            "episodes": [e.__dict__ for e in priming.episodes],
            "open_threads": [t.__dict__ for t in priming.open_threads],
            "entities": list(priming.entities),
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
