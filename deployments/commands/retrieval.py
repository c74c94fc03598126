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
from storage.retrieval import Hit, Retriever, SearchOptions, TimeRange, cite, source_entries

if TYPE_CHECKING:
    from deployments.commands import SearchFlags
    from deployments.progress import Bars

Echo = Callable[[str], None]


def run_search(settings: Settings, namespace: str, query: str, flags: SearchFlags) -> list[Hit]:
    """One search with the CLI's options resolved into weights (``as_of`` already aware)."""
    preload_model(settings.embedding)  # the model loads while the store opens
    retriever = Retriever.from_settings(settings)
    chosen = None
    if flags.weights:
        chosen = resolve_weights("custom", parse_weights(flags.weights))
    elif flags.preset:
        chosen = resolve_weights(flags.preset, PRESETS[flags.preset])
    when = cast(TimeRange | None, flags.time_range)  # one of click's choices
    options = SearchOptions(time_range=when, kinds=flags.kinds or None, weights=chosen)
    return retriever.search(
        namespace,
        query,
        limit=flags.limit,
        as_of=flags.as_of,
        record_access=not flags.no_record,
        options=options,
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


def render_hits(hits: Sequence[Hit], *, explain: bool, echo: Echo) -> None:
    """A readable table: label, score, kind, date, text; with the breakdown when asked; then
    the ``Sources:`` line."""
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
        text = " ".join(hit.content.split())
        if hit.low_confidence:
            text = f"(low confidence) {text}"
        short = text if len(text) <= 90 else text[:87] + "..."
        echo(
            f"{citation.label:<11}  {hit.score:6.3f}  {hit.kind:<10} "
            f"{hit.occurred_at:%Y-%m-%d %H:%M} {short}"
        )
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
    settings: Settings, namespace: str, message: str | None, echo: Echo, *, as_document: bool
) -> None:
    """Print the priming text, or its parts and text as one JSON document."""
    if message:  # only a first message is searched for, and so embedded
        preload_model(settings.embedding)  # the model loads while the store opens
    priming = Retriever.from_settings(settings).prime(namespace, message)
    if not (priming.facts or priming.episodes or priming.open_threads):
        hint = namespace_hint(settings, namespace)
        if hint is not None:
            click.echo(f"note: {hint}", err=True)
    if as_document:
        from serving import priming_view

        echo(as_json(priming_view(priming)))
    else:
        echo(priming.formatted)


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
