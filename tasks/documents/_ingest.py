"""Ingest: files from folders, single files or fsspec URLs into documents and their chunks.

Each file is read (unless it is over the size cap), hashed and compared with the stored
document of the same URI: the same bytes with the same chunking write nothing (a new
``--tag`` changes the tag alone); otherwise it is parsed, chunked and embedded, and one
transaction writes the document and replaces its chunks, so a changed file replaces only
its own. A file that gives no text is skipped and counted by reason; it never stops the
run. Each document commits on its own: a run cut short keeps what it finished, and a
re-run skips those files as unchanged.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import fsspec
from fsspec import AbstractFileSystem
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import documents as store
from storage.embedding import Embedder
from storage.kernel.document_input import check_size, check_tag
from storage.kernel.errors import ROWS_REFUSED, InputError
from storage.kernel.inputs import storable
from storage.kernel.records import NAMESPACE
from tasks.documents._gone import gone_documents, ingested_folders
from tasks.documents._gone import prune as prune_gone
from tasks.documents._read import Skip, format_of, parse
from tasks.documents._write import (
    Chunking,
    Incoming,
    document_rows,
    unchanged,
    write_rows,
)

OnProgress = Callable[[int, int], None]


@dataclass
class DocsReport:
    """What one ingest did: documents added, updated, unchanged, chunks written, skips."""

    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    retagged: int = 0
    chunks: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)  # documents whose files left the folder
    pruned: int = 0  # of those, dropped (prune)

    def skip(self, uri: str, reason: str, detail: str = "") -> None:
        self.skipped[reason] += 1
        self.problems.append((uri, reason, detail))


@dataclass(frozen=True)
class Source:
    """One file to ingest: its filesystem, path there, and the URI it is stored under."""

    fs: AbstractFileSystem
    path: str
    uri: str


def check_names(namespace: str, tag: str | None) -> None:
    """Refuse a bad namespace or tag before anything is read."""
    if not NAMESPACE.fullmatch(namespace):
        raise InputError(f"bad namespace {namespace!r}: lowercase letters, digits, '.', '_', '-'")
    if tag is not None:
        try:
            check_tag(tag)
        except ValueError as exc:
            raise InputError(f"bad tag {tag[:120]!r}: {exc}") from None


def sources(urls: Sequence[str], options: dict[str, Any], report: DocsReport) -> list[Source]:
    """Every file under the URLs (folders: the files of known formats, recursively)."""
    found: list[Source] = []
    for url in urls:
        fs, root = fsspec.core.url_to_fs(url, **options)
        local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))
        if fs.isdir(root):
            paths = [p for p in sorted(fs.find(root)) if format_of(p) is not None]
            if local:
                paths = _inside(root, paths, report)
        elif fs.isfile(root):
            paths = [root]
        else:
            report.skip(url, "not_found")
            continue
        found += [Source(fs, p, p if local else fs.unstrip_protocol(p)) for p in paths]
    return found


def _inside(root: str, paths: list[str], report: DocsReport) -> list[str]:
    """The local paths that are in the folder ``root`` once symbolic links are followed; the
    others (a link to ``/etc/passwd``, say) are skipped: a folder's ingest reads that folder."""
    folder = os.path.realpath(root)
    kept = []
    for path in paths:
        if os.path.commonpath([folder, os.path.realpath(path)]) == folder:
            kept.append(path)
        else:
            report.skip(path, "outside_folder", "a symbolic link out of the folder")
    return kept


@dataclass(frozen=True)
class IngestRequest:
    """What to ingest where, and how: the files under ``urls`` into ``namespace``, cut by
    ``chunking``, labelled ``tag``, files over ``max_bytes`` skipped, stamped ``at``;
    ``options`` for the file system, ``embed_batch`` chunks embedded together; with
    ``prune``, documents whose files are gone from an ingested folder are dropped (audited
    under ``actor``)."""

    namespace: str
    urls: Sequence[str]
    chunking: Chunking
    max_bytes: int
    at: datetime
    tag: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    embed_batch: int = 256
    prune: bool = False
    actor: str = "ingest"


def ingest_documents(
    engine: Engine,
    embedder: Embedder,
    request: IngestRequest,
    on_progress: OnProgress | None = None,
) -> DocsReport:
    """Ingest the request's files; bad files are skipped, counted. Documents under an
    ingested folder whose files are gone are reported, and with ``prune`` dropped."""
    check_names(request.namespace, request.tag)
    request.chunking.check()
    report = DocsReport()
    files = sources(request.urls, request.options, report)
    with Session(engine) as session:
        stored = store.stored_documents(session, request.namespace)
    for done, source in enumerate(files, start=1):
        report.files += 1
        _one(engine, embedder, request, source, stored.get(source.uri), report)
        if on_progress is not None:
            on_progress(done, len(files))
    gone = gone_documents(ingested_folders(request.urls, request.options), stored)
    report.gone = sorted(gone)
    if request.prune and gone:
        prune_gone(engine, request.namespace, gone, request.actor)
        report.pruned = len(gone)
    return report


def _one(
    engine: Engine,
    embedder: Embedder,
    request: IngestRequest,
    source: Source,
    existing: store.StoredDocument | None,
    report: DocsReport,
) -> None:
    chunking, tag, at = request.chunking, request.tag, request.at
    try:
        storable(source.uri)
    except ValueError as exc:
        report.skip(source.uri, "refused", f"its name {exc}")
        return
    kept_tag = existing.tag if existing is not None else None
    try:
        data = _read(source, request.max_bytes)
        incoming = Incoming(
            request.namespace, source.uri, source.path, data, kept_tag if tag is None else tag
        )
        if existing is not None and unchanged(existing, incoming.digest, chunking):
            _keep(engine, existing, tag, at, report)
            return
        parsed = parse(source.path, data)
    except Skip as skip:
        report.skip(source.uri, skip.reason, skip.detail)
        return
    except OSError as exc:  # permissions, a file gone meanwhile, a bucket's refusal
        report.skip(source.uri, "unreadable", type(exc).__name__)
        return
    rows = document_rows(incoming, parsed, chunking, embedder, at, embed_batch=request.embed_batch)
    try:
        with Session(engine) as session, session.begin():
            written = write_rows(session, rows, existing.id if existing else None, embedder.name)
    except ROWS_REFUSED as exc:  # this file's rows; a server that is down raises
        report.skip(source.uri, "refused", type(getattr(exc, "orig", None) or exc).__name__)
        return
    if written is None:  # purged while it was read: the purge stands
        report.skip(source.uri, "refused", "the document was purged meanwhile")
        return
    report.chunks += written[1]
    if existing is None:
        report.added += 1
    else:
        report.updated += 1


def _read(source: Source, max_bytes: int) -> bytes:
    """The file's bytes, unless it is over the cap (checked before reading)."""
    check_size(int(source.fs.size(source.path)), max_bytes)
    return bytes(source.fs.cat_file(source.path))


def _keep(
    engine: Engine, existing: store.StoredDocument, tag: str | None, at: datetime, r: DocsReport
) -> None:
    if tag is None or tag == existing.tag:
        r.unchanged += 1
        return
    with Session(engine) as session, session.begin():
        store.set_tag(session, existing.id, tag, at)
    r.retagged += 1
