"""Context within a token budget: the best passages that fit, each once, with citations.

``fit`` walks hits in rank order and keeps each whose labelled line and ``Sources:`` entry
still fit (``render_citations``' text, counted with the local model's tokenizer,
``storage.embedding.count_tokens``); one that does not fit is passed over for the smaller
ones after it. Its ``Sources:`` entries are short (``memory 42, 2026-11-20``): the full
provenance took about 35 tokens a hit, more than many passages; the hits carry it. A
passage that says again what a kept one says (nine in ten of its words) is left out.
``tokens_used`` is the count of the text an assistant is handed, ``Sources:`` included.

``whole=True`` packs whole memories instead of passages: the baseline the evaluation
compares with (``tasks.evaluation``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, TypedDict, Unpack

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from storage.kernel.errors import RetrievalError, StorageError
from storage.kernel.inputs import token_budget
from storage.kernel.settings import RetrievalSettings
from storage.retrieval._types import DOC_KIND, Hit, SearchOptions
from storage.retrieval.candidates import POOL_HITS, RECORD_ACCESS, aware, execute
from storage.retrieval.explain._citations import Citation, render_citations, short_provenance
from storage.server.binary_arrays import Int8Array

Counter = Callable[[Sequence[str]], list[int]]
_WORDS = re.compile(r"\w+")
_SAME = 0.9  # share of a passage's words already shown from which it repeats a kept one


@dataclass(frozen=True)
class Context:
    """The labelled passages that fit a budget, and how many tokens their text takes."""

    citations: tuple[Citation, ...]
    budget_tokens: int
    tokens_used: int
    left_out: int  # candidates that did not fit, or repeated a kept passage

    @property
    def hits(self) -> tuple[Hit, ...]:
        return tuple(c.hit for c in self.citations)

    @property
    def text(self) -> str:
        """What an assistant reads: one labelled line per passage, then ``Sources:``."""
        return render_citations(self.citations)


class Within(TypedDict, total=False):
    """How a budgeted search runs, as ``Retriever.search`` takes it."""

    as_of: datetime | None
    record_access: bool
    options: SearchOptions
    conn: Connection | None
    shown: Callable[[Hit], Hit] | None


class Searcher(Protocol):
    """What a budgeted search needs of a retriever (``Retriever`` has it)."""

    engine: Engine
    settings: RetrievalSettings

    def search(
        self,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        as_of: datetime | None = None,
        record_access: bool = True,
        options: SearchOptions = ...,
        conn: Connection | None = None,
    ) -> list[Hit]: ...


def search_within(
    retriever: Searcher, namespace: str, query: str, budget_tokens: int, **how: Unpack[Within]
) -> Context:
    """The best passages that fit ``budget_tokens``, chosen from the best hits of a whole
    candidate pool (``POOL_HITS``, within the configured ``max_limit``); only the hits kept
    count as an access."""
    budget = checked_budget(budget_tokens)
    as_of = how.get("as_of")
    now = aware(as_of) if as_of is not None else datetime.now(UTC)
    pool = min(POOL_HITS, retriever.settings.max_limit)
    options = how.get("options") or SearchOptions()
    with _transaction(retriever, how.get("conn")) as tx:
        found = retriever.search(
            namespace, query, limit=pool, as_of=now, record_access=False, options=options, conn=tx
        )
        show = how.get("shown")
        shown = found if show is None else [show(hit) for hit in found]
        context = fit(shown, budget)
        if how.get("record_access", True) and context.hits:
            # By the store's ids: the hits kept, as found.
            stored = {(s.kind, s.memory_id): hit for s, hit in zip(shown, found, strict=True)}
            kept = [stored[(hit.kind, hit.memory_id)] for hit in context.hits]
            prepare = retriever.settings.prepared_statements
            try:
                record_hits(tx, namespace, kept, query, now, prepare=prepare)
            except DBAPIError as exc:
                raise StorageError(f"search in namespace {namespace!r} failed: {exc.orig}") from exc
    return context


@contextmanager
def _transaction(retriever: Searcher, conn: Connection | None) -> Iterator[Connection]:
    if conn is not None:
        yield conn
        return
    with retriever.engine.begin() as own:
        yield own


def record_hits(
    conn: Connection,
    namespace: str,
    hits: Sequence[Hit],
    query: str,
    at: datetime,
    *,
    prepare: bool,
) -> None:
    """Count each memory hit as an access of a search for ``query`` (one statement)."""
    # Chunks are not memories (their memory_id is None).
    ids = [h.memory_id for h in hits if h.kind != DOC_KIND and h.memory_id is not None]
    if ids:
        context = f"search: {query[:500]}"
        params = {"namespace": namespace, "ids": Int8Array(ids), "context": context, "at": at}
        execute(conn, RECORD_ACCESS, params, prepare=prepare)


def checked_budget(value: int) -> int:
    """The budget, or ``RetrievalError`` saying why not (``storage.kernel.inputs``)."""
    try:
        return token_budget(value)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None


def default_counter() -> Counter:
    from storage.embedding import count_tokens

    return count_tokens


def fit(
    hits: Sequence[Hit], budget: int, *, whole: bool = False, count: Counter | None = None
) -> Context:
    """The best of ``hits`` (in rank order) whose text fits ``budget`` tokens, each once."""
    budget = checked_budget(budget)
    count = count or default_counter()
    shown = [h.content if whole else h.shown for h in hits]
    lines = [" ".join(s.split()) for s in shown]
    origins = [short_provenance(h) for h in hits]
    sizes = count([*lines, *origins, "Sources:"])
    n = len(hits)
    text_tokens, origin_tokens, used = sizes[:n], sizes[n : 2 * n], sizes[2 * n]
    labels: dict[str, int] = {}
    label_tokens: dict[str, int] = {}
    kept: list[Citation] = []
    seen: list[frozenset[str]] = []
    left_out = 0
    for i, hit in enumerate(hits):
        words = frozenset(_WORDS.findall(lines[i].casefold()))
        noun = "Doc" if hit.kind == DOC_KIND else "Memory"
        label = f"[{noun} {labels.get(noun, 0) + 1}]"
        if label not in label_tokens:
            label_tokens[label] = count([label])[0]
        # the line and the Sources entry each start with the label; entries after the
        # first are joined by "; " (one token)
        cost = text_tokens[i] + origin_tokens[i] + 2 * label_tokens[label] + (1 if kept else 0)
        if _repeats(words, seen) or used + cost > budget:
            left_out += 1
            continue
        labels[noun] = labels.get(noun, 0) + 1
        seen.append(words)
        kept.append(Citation(label, _showing(hit, shown[i]), origins[i]))
        used += cost
    return _counted(kept, budget, left_out, count)


def _counted(kept: list[Citation], budget: int, left_out: int, count: Counter) -> Context:
    """The context with its text counted as a whole (the parts' sum, checked)."""
    while kept:
        used = count([render_citations(kept)])[0]
        if used <= budget:
            return Context(tuple(kept), budget, used, left_out)
        kept.pop()  # not expected: the count of joined text is the sum of its parts
        left_out += 1
    return Context((), budget, 0, left_out)


def _showing(hit: Hit, text: str) -> Hit:
    return hit if hit.shown == text else hit.changed(passage=text)


def _repeats(words: frozenset[str], seen: Sequence[frozenset[str]]) -> bool:
    if not words:
        return False
    return any(len(words & other) >= _SAME * len(words) for other in seen)
