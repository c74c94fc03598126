"""The ids the API and the MCP server show, and take: public ones (``storage.public_ids``).

Every id that leaves a serving process is a public one: a hit's memory, the memories a
long-term line came from, a document and its chunk, a queued write, the memory of an
episode, and the memory ids traced in ``MEMORY.md`` (``<!-- m:12,40-42 +3 -->``) and the
daily logs (``<!-- session=… state=… memories=12,13 -->``; a long-term trace lists up to
``MAX_TRACED`` public ids and counts the rest). A memory id a client sends is taken back
the same way; a number that is no public id names no memory (404).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from storage.public_ids import Kind, PublicIds
from storage.retrieval import Hit

# The traces the memory files carry (tasks.tidy's ``trace`` and tasks.sync's ``_trace``).
LONG_TERM_TRACE = re.compile(r"<!-- m:([0-9,\-]*)((?: \+\d+)?) -->")
DAILY_TRACE = re.compile(r"(<!-- session=\S* state=\S* memories=)([0-9,]*)( -->)")
# The ids a queued write's result names (``tasks.queue``, ``tasks.documents``).
RESULT_IDS: tuple[tuple[str, Kind], ...] = (("memory_id", "memory"), ("document_id", "document"))
# Public ids have no runs: a long-term line's trace lists this many, and counts the rest.
MAX_TRACED = 20


@dataclass(frozen=True)
class ShownIds:
    """One store's public ids, applied to what serving shows and takes."""

    ids: PublicIds

    def show(self, kind: Kind, real: int) -> int:
        return self.ids.show(kind, real)

    def _maybe(self, kind: Kind, real: int | None) -> int | None:
        return None if real is None else self.ids.show(kind, real)

    def take(self, kind: Kind, public: int) -> int | None:
        return self.ids.take(kind, public)

    def hit(self, hit: Hit) -> Hit:
        """The hit with public ids (labels and provenance follow from them)."""
        doc = hit.doc
        if doc is not None:
            doc = replace(
                doc,
                document_id=self.ids.show("document", doc.document_id),
                chunk_id=self.ids.show("chunk", doc.chunk_id),
            )
        return hit.changed(
            memory_id=self._maybe("memory", hit.memory_id),
            sources=tuple(self.ids.show("memory", s) for s in hit.sources),
            doc=doc,
        )

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A row with its ``memory_id`` public."""
        return row | {"memory_id": self._maybe("memory", row.get("memory_id"))}

    def item(self, row: dict[str, Any]) -> dict[str, Any]:
        """A queued write's status with public ids: its own, and the memory or document its
        result names."""
        result = row.get("result")
        if isinstance(result, dict):
            result = result | {
                key: self._maybe(kind, result[key]) for key, kind in RESULT_IDS if key in result
            }
        return row | {"queue_item": self.ids.show("queue", row["queue_item"]), "result": result}

    def traces(self, markdown: str) -> str:
        """A memory file with the memory ids of its traces public (a range spelled out)."""
        markdown = LONG_TERM_TRACE.sub(self._long_term, markdown)
        return DAILY_TRACE.sub(self._daily, markdown)

    def _long_term(self, found: re.Match[str]) -> str:
        reals = _expand(found.group(1))
        rest = len(reals[MAX_TRACED:]) + int(found.group(2).strip(" +") or 0)
        more = f" +{rest}" if rest else ""
        return f"<!-- m:{self._list(reals[:MAX_TRACED])}{more} -->"

    def _daily(self, found: re.Match[str]) -> str:
        return found.group(1) + self._list(_expand(found.group(2))) + found.group(3)

    def _list(self, reals: list[int]) -> str:
        return ",".join(str(self.ids.show("memory", real)) for real in reals)


def _expand(runs: str) -> list[int]:
    """``12,40-42`` as 12, 40, 41, 42."""
    ids: list[int] = []
    for run in filter(None, runs.split(",")):
        low, _, high = run.partition("-")
        ids += range(int(low), int(high or low) + 1)
    return ids
