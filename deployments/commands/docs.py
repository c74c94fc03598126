"""``archivist docs``: knowledge documents beside memories (ingest, list, purge, rebuild,
feedback). Added to ``archivist`` by ``deployments.cli``.

Plain commands, no Prefect flow: an ingest is asked for by a person, on files they name,
and reports at once; it has no schedule to keep, and each document commits on its own, so
a run cut short is finished by running it again (unchanged files are skipped).
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from deployments.settings_loader import load_settings
from storage.kernel.errors import InputError
from storage.kernel.inputs import printable
from storage.kernel.settings import Settings

if TYPE_CHECKING:
    from deployments.progress import Bars
    from tasks.documents import DocsReport, IngestRequest

Echo = Callable[[str], None]
FILES = "document files"


@click.group("docs")
def docs_group() -> None:
    """Knowledge documents: reference files searched beside memories."""


@docs_group.command("ingest")
@click.argument("namespace")
@click.argument("urls", nargs=-1, required=True)
@click.option("--tag", help="Label the documents (purge --tag removes them together).")
@click.option("--chunk-size", type=int, default=None, help="Characters per chunk, at most.")
@click.option("--overlap", type=int, default=None, help="Characters a long section's chunks share.")
@click.option(
    "--prune", is_flag=True, help="Drop documents of the folders whose files are gone from them."
)
def ingest_command(
    namespace: str,
    urls: tuple[str, ...],
    tag: str | None,
    chunk_size: int | None,
    overlap: int | None,
    *,
    prune: bool,
) -> None:
    """Read Markdown, text, HTML and PDF files (folders, files, s3://...) into NAMESPACE."""
    from deployments.progress import progress_bars
    from tasks.documents import Chunking, IngestRequest

    settings = load_settings()
    docs = settings.documents
    chunking = Chunking(chunk_size or docs.chunk_size, docs.overlap if overlap is None else overlap)
    request = IngestRequest(
        namespace,
        urls,
        chunking,
        max_bytes=docs.max_file_bytes,
        at=datetime.now(UTC),
        tag=tag,
        options=settings.storage_options,
        embed_batch=docs.embed_batch,
        prune=prune,
        actor=f"cli:{getpass.getuser()}",
    )
    with progress_bars() as bars:
        run_ingest(settings, request, bars)


def run_ingest(settings: Settings, request: IngestRequest, bars: Bars) -> DocsReport:
    """Ingest with progress, then counts, every skipped file with its reason, and the
    documents whose files are gone (dropped with ``prune``)."""
    from storage.server.connect import connect
    from tasks.documents import check_names, ingest_documents

    check_names(request.namespace, request.tag)
    request.chunking.check()
    store, embedder = connect(settings)
    report = ingest_documents(
        store.engine,
        embedder,
        request,
        on_progress=lambda done, total: bars.update(
            FILES, done, total, line=f"  {done}/{total} files read"
        ),
    )
    for uri, reason, detail in report.problems:
        shown = f"  skipped {printable(uri, 300)}: {reason}"
        bars.echo(shown + (f" ({printable(detail, 300)})" if detail else ""))
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items()))
    bars.echo(
        f"{report.files} files: {report.added} added, {report.updated} updated, "
        f"{report.unchanged} unchanged, {report.retagged} retagged; {report.chunks} chunks "
        f"written; skipped: {skipped or 'none'}"
    )
    _say_gone(report, bars.echo)
    missing = [uri for uri, reason, _ in report.problems if reason == "not_found"]
    if missing:  # a path typed wrong is an error, though the others were ingested
        raise InputError(
            f"not found: {', '.join(missing)}; give a folder, a file or s3://bucket/prefix "
            "that exists"
        )
    return report


def _say_gone(report: DocsReport, echo: Echo) -> None:
    """The documents whose files left the ingested folders: dropped, or how to drop them."""
    if not report.gone:
        return
    for uri in report.gone:
        echo(f"  {'dropped' if report.pruned else 'file gone'}: {uri}")
    if report.pruned:
        echo(f"dropped {report.pruned} documents whose files are gone, with their chunks")
    else:
        echo(
            f"{len(report.gone)} documents whose files are gone are still searchable; "
            "run the same ingest with --prune to drop them"
        )


@docs_group.command("list")
@click.argument("namespace")
@click.option("--json", "as_json", is_flag=True, help="Print the documents as one JSON document.")
def list_command(namespace: str, *, as_json: bool) -> None:
    """The documents of NAMESPACE: id, chunks, tag, title, source."""
    show_documents(load_settings(), namespace, as_json=as_json, echo=click.echo)


def show_documents(settings: Settings, namespace: str, *, as_json: bool, echo: Echo) -> None:
    from storage.server.engine import open_store
    from storage.server.migrate import require_current
    from tasks.documents import list_documents

    store = open_store(settings)
    require_current(store.engine, settings)
    rows = list_documents(store.engine, namespace)
    if as_json:
        echo(
            json.dumps(
                {"namespace": namespace, "documents": [_jsonable(r) for r in rows]},
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if not rows:
        echo(f"no documents in {namespace}")
        return
    echo(f"{'id':>6}  {'chunks':>6}  {'tag':<12} {'ingested':<16} title  (source)")
    for r in rows:  # names and titles come from files: printed with control characters escaped
        echo(
            f"{r['id']:>6}  {r['chunks']:>6}  {printable(r['tag'] or '-'):<12} "
            f"{r['ingested_at']:%Y-%m-%d %H:%M} {printable(r['title'] or '', 300)}  "
            f"({printable(r['uri'], 300)})"
        )


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


@docs_group.command("purge")
@click.argument("namespace")
@click.argument("document_id", type=int, required=False)
@click.option("--tag", help="Erase every document with this tag instead.")
def purge_command(namespace: str, document_id: int | None, tag: str | None) -> None:
    """Erase one document (by id) or every document with --tag, and their chunks."""
    from storage.server.engine import open_store
    from storage.server.migrate import require_current
    from tasks.documents import purge_documents

    settings = load_settings()
    store = open_store(settings)
    require_current(store.engine, settings)
    actor = f"cli:{getpass.getuser()}"
    ids, chunks = purge_documents(
        store.engine, namespace, document_id=document_id, tag=tag, actor=actor
    )
    click.echo(f"purged {len(ids)} documents ({', '.join(map(str, ids))}), {chunks} chunks")


@docs_group.command("rebuild")
@click.argument("namespace")
@click.option("--chunk-size", type=int, default=None, help="New chunk size for every document.")
@click.option("--overlap", type=int, default=None, help="New overlap for every document.")
def rebuild_command(namespace: str, chunk_size: int | None, overlap: int | None) -> None:
    """Re-chunk and re-embed NAMESPACE's documents from their stored text (not the source)."""
    from deployments.progress import progress_bars
    from storage.server.connect import connect
    from tasks.documents import Chunking, rebuild

    settings = load_settings()
    chunking = None
    if chunk_size is not None or overlap is not None:
        docs = settings.documents
        chunking = Chunking(
            chunk_size or docs.chunk_size, docs.overlap if overlap is None else overlap
        )
    store, embedder = connect(settings)
    with progress_bars() as bars:
        out = rebuild(
            store.engine,
            embedder,
            namespace,
            datetime.now(UTC),
            chunking,
            on_progress=lambda done, total: bars.update(
                "documents rebuilt", done, total, line=f"  {done}/{total} documents rebuilt"
            ),
        )
        bars.echo(f"rebuilt {out.documents} documents into {out.chunks} chunks")


# ``-1`` is the vote, not an option.
@docs_group.command("feedback", context_settings={"ignore_unknown_options": True})
@click.argument("chunk_id", type=int)
@click.argument("vote", type=click.Choice(["+1", "-1"]))
def feedback_command(chunk_id: int, vote: str) -> None:
    """Say a chunk helped (+1) or did not (-1): its importance moves, within [0, 1]."""
    from storage.server.engine import open_store
    from storage.server.migrate import require_current
    from tasks.documents import feedback

    settings = load_settings()
    store = open_store(settings)
    require_current(store.engine, settings)
    state = feedback(store.engine, chunk_id, int(vote), settings.documents.feedback_step)
    click.echo(
        f"chunk {chunk_id}: importance {state['importance']:.2f} "
        f"(+{state['feedback_up']} / -{state['feedback_down']})"
    )
