"""Documents whose files left a folder that is ingested again.

A re-ingest of a folder reads what is in it; a document whose file was deleted from it
would stay searchable until ``docs purge``. The documents stored under an ingested
folder's path whose file no longer exists are found on every folder ingest and reported;
``--prune`` drops them (with their chunks, one audit row), as ``docs purge`` would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import fsspec
from fsspec import AbstractFileSystem
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import audit
from storage import documents as store


def _local(fs: AbstractFileSystem) -> bool:
    return "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))


def ingested_folders(urls: Sequence[str], options: dict[str, Any]) -> list[tuple[Any, str]]:
    """The URLs that name folders: each one's filesystem and root."""
    found = []
    for url in urls:
        fs, root = fsspec.core.url_to_fs(url, **options)
        if fs.isdir(root):
            found.append((fs, root))
    return found


def gone_documents(
    folders: Sequence[tuple[Any, str]], stored: Mapping[str, store.StoredDocument]
) -> dict[str, int]:
    """URI and id of each stored document under one of ``folders`` whose file is gone."""
    gone: dict[str, int] = {}
    for fs, root in folders:
        local = _local(fs)
        prefix = (root if local else fs.unstrip_protocol(root)).rstrip("/") + "/"
        for uri, document in stored.items():
            if uri.startswith(prefix) and not fs.exists(uri if local else fs._strip_protocol(uri)):
                gone[uri] = document.id
    return gone


def prune(engine: Engine, namespace: str, gone: Mapping[str, int], actor: str) -> int:
    """Drop the documents whose files are gone, with their chunks; the chunks dropped."""
    chunks = 0
    with Session(engine) as session, session.begin():
        for document_id in sorted(gone.values()):
            chunks += store.purge_documents(session, namespace, document_id=document_id).chunks
        audit.record(
            session,
            "purge_documents",
            actor=actor,
            namespace=namespace,
            target="gone_files",
            details={
                "documents": len(gone),
                "chunks": chunks,
                "document_ids": sorted(gone.values())[:1000],
            },
        )
    return chunks
