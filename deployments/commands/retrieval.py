"""The CLI's search, prime and index commands: plain functions over a Retriever."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import click

from storage.embedding import preload_model
from storage.kernel.scoring import PRESETS, parse_weights, resolve_weights
from storage.kernel.settings import Settings
from storage.retrieval import (
    Context,
    Hit,
    Retriever,
    SearchOptions,
    TimeRange,
    cite,
    search_within,
    source_entries,
)

if TYPE_CHECKING:
    from deployments.commands import SearchFlags
    from deployments.progress import Bars

Echo = Callable[[str], None]


def search_options(flags: SearchFlags) -> SearchOptions:
    """The CLI's time range, kinds and weights as a search's options."""
    chosen = None
    if flags.weights:
        chosen = resolve_weights("custom", parse_weights(flags.weights))
    elif flags.preset:
        chosen = resolve_weights(flags.preset, PRESETS[flags.preset])
    when = cast(TimeRange | None, flags.time_range)  # one of click's choices
    return SearchOptions(time_range=when, kinds=flags.kinds or None, weights=chosen)


def run_search(settings: Settings, namespace: str, query: str, flags: SearchFlags) -> list[Hit]:
    """One search with the CLI's options resolved into weights (``as_of`` already aware)."""
    preload_model(settings.embedding)  # the model loads while the store opens
    retriever = Retriever.from_settings(settings)
    options = search_options(flags)
    return retriever.search(
        namespace,
        query,
        limit=flags.limit,
        as_of=flags.as_of,
        record_access=not flags.no_record,
        options=options,
    )


def search_and_show(
    settings: Settings, namespace: str, query: str, flags: SearchFlags, echo: Echo
) -> list[Hit]:
    """``archivist search``: the hits as a table or JSON, or with a budget the context that
    fits; the hits shown."""
    if flags.budget_tokens is not None:
        context = run_search_within(settings, namespace, query, flags)
        render_context(namespace, query, context, flags, echo=echo)
        return list(context.hits)
    hits = run_search(settings, namespace, query, flags)
    if flags.as_json:
        render_hits_json(namespace, query, hits, explain=flags.explain, echo=echo)
    else:
        render_hits(hits, explain=flags.explain, full=flags.full, echo=echo)
    return hits


def run_search_within(
    settings: Settings, namespace: str, query: str, flags: SearchFlags
) -> Context:
    """The best passages that fit ``flags.budget_tokens``, as ``run_search`` searches."""
    assert flags.budget_tokens is not None, "a budgeted search has a budget"
    preload_model(settings.embedding)
    return search_within(
        Retriever.from_settings(settings),
        namespace,
        query,
        flags.budget_tokens,
        as_of=flags.as_of,
        record_access=not flags.no_record,
        options=search_options(flags),
    )


def render_context(
    namespace: str, query: str, context: Context, flags: SearchFlags, *, echo: Echo
) -> None:
    """A budgeted search: the text an assistant is handed (labelled passages, ``Sources:``)
    and the tokens it takes; as JSON, the hits in the API's shape with the same counts."""
    if flags.as_json:
        from serving import context_view

        echo(as_json({"namespace": namespace, "query": query} | context_view(namespace, context)))
        return
    if context.citations:
        echo(context.text)
        echo("")
    else:
        echo("no passage fits" if context.left_out else "no memories found")
    left = f"; {context.left_out} more passed over" if context.left_out else ""
    echo(
        f"{context.tokens_used} of {context.budget_tokens} tokens "
        f"({len(context.citations)} passages{left})"
    )


def namespace_hint(settings: Settings, namespace: str) -> str | None:
    """For a namespace that holds nothing (a typo?), the namespaces that do; else None."""
    from storage.operations.status import holds_anything, known_namespaces
    from storage.server.engine import open_store

    with open_store(settings).engine.connect() as conn:
        if holds_anything(conn, namespace):
            return None
        known = known_namespaces(conn)
    if not known:
        return "the store holds no namespace yet: `archivist ingest PATH` or `archivist demo`"
    return f"namespace {namespace!r} holds nothing; namespaces that do: {', '.join(known)}"


TEXT_WIDTH = 72  # the memory column; longer passages go on under it


def render_hits(hits: Sequence[Hit], *, explain: bool, echo: Echo, full: bool = False) -> None:
    """A readable table: label, score, kind, date, and the passage that answers (``full``:
    the whole memory), wrapped under its column; with the breakdown when asked; then the
    ``Sources:`` line."""
    if not hits:
        echo("no memories found")
        return
    cited = cite(hits)
    if explain:
        for note in time_notes(hits[0]):
            echo(note)
    echo(f"{'cite':<11}  {'score':>6}  {'kind':<10} {'when':<16} memory")
    for citation in cited:
        hit = citation.hit
        text = " ".join((hit.content if full else hit.shown).split())
        if hit.low_confidence:
            text = f"(low confidence) {text}"
        lines = textwrap.wrap(text, TEXT_WIDTH, break_on_hyphens=False) or [""]
        lead = f"{citation.label:<11}  {hit.score:6.3f}  {hit.kind:<10} "
        echo(f"{lead}{hit.occurred_at:%Y-%m-%d %H:%M} {lines[0]}")
        for line in lines[1:]:
            echo(" " * (len(lead) + 17) + line)
        if explain:
            for line in textwrap.wrap(hit.explain(), 100):
                echo(f"{'':>13}{line}")
    echo("")
    # The Sources: line, one source per terminal line (aligned under the first).
    sources = source_entries(cited)
    for n, source in enumerate(sources):
        lead = "Sources: " if n == 0 else " " * len("Sources: ")
        echo(lead + source + (";" if n < len(sources) - 1 else ""))


def time_notes(hit: Hit) -> list[str]:
    """What the question said about time, as ranking read it (the same for every hit)."""
    notes = []
    if hit.window is not None:
        notes.append(f"time window {hit.window}: memories from then ranked higher")
    if hit.weights.get("supersede"):
        notes.append("about now: an older memory ranks after a newer one that restates it")
    return notes


def render_hits_json(
    namespace: str, query: str, hits: Sequence[Hit], *, explain: bool, echo: Echo
) -> None:
    """The hits as one JSON document, in the HTTP API's and MCP's shape (``serving``): each
    hit with its label, and the ``sources`` line."""
    from serving import search_view

    found = search_view(namespace, cite(hits), explain=explain)
    echo(as_json({"namespace": namespace, "query": query} | found))


def run_prime(
    settings: Settings,
    namespace: str,
    message: str | None,
    echo: Echo,
    *,
    as_document: bool,
    budget: int | None = None,
) -> None:
    """Print the priming text, or its parts and text as one JSON document; within
    ``budget`` tokens when given, with the count."""
    if message:  # only a first message is searched for, and so embedded
        preload_model(settings.embedding)  # the model loads while the store opens
    priming = Retriever.from_settings(settings).prime(namespace, message, budget_tokens=budget)
    if not (priming.facts or priming.episodes or priming.open_threads):
        hint = namespace_hint(settings, namespace)
        if hint is not None:
            click.echo(f"note: {hint}", err=True)
    if as_document:
        from serving import priming_view

        echo(as_json(priming_view(priming)))
    else:
        echo(priming.formatted)
        if priming.budget_tokens is not None:
            echo(f"\n{priming.tokens_used} of {priming.budget_tokens} tokens")


def as_json(document: dict[str, Any]) -> str:
    """One indented JSON document; non-ASCII text as is."""
    return json.dumps(document, indent=2, ensure_ascii=False)


def run_index(settings: Settings, min_rows: int | None, bars: Bars) -> dict[str, int]:
    """Flag large namespaces' memories into the HNSW index, with progress."""
    from storage.server.engine import Role, open_store
    from storage.server.migrate import require_current
    from tasks.ann_index import refresh_ann_index

    store = open_store(settings, Role.OWNER)  # it creates the namespaces' indexes
    require_current(store.engine, settings)
    threshold = min_rows or settings.retrieval.ann_min_namespace_rows
    done = refresh_ann_index(
        store.engine,
        threshold,
        on_progress=lambda ns, n, total: bars.update(
            f"indexing {ns}", n, total, line=f"  {ns}: {n}/{total} rows indexed"
        ),
    )
    bars.echo(f"{sum(done.values())} rows indexed in {len(done)} namespaces of >= {threshold} rows")
    return done
