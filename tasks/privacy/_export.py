"""Export a namespace before it is forgotten: a bundle anyone can read back.

```
<url>/<namespace>/memories.parquet          hot memories, vectors included
<url>/<namespace>/archived/<file>.parquet    the cold tier's memory files, as they are
<url>/<namespace>/transcripts/<file>.parquet raw messages of compressed sessions
<url>/<namespace>/sessions/<session>.jsonl   live sessions, in the transcript format
<url>/<namespace>/episodes.jsonl            episode summaries and their structure
<url>/<namespace>/documents.jsonl           documents: source, title, tag, text, chunk spans
<url>/<namespace>/files/...                 the memory files as they are: MEMORY.md, the
                                            daily logs, timeline.jsonl
<url>/<namespace>/bundle.json               counts of everything above
```
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec import AbstractFileSystem
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from storage import archive
from storage.archive import EARLIEST, MEMORY_SCHEMA, MemoryReader, Page, fetch_memories
from storage.documents import DocumentChunk, documents_of
from storage.episodes import Episode
from storage.sessions import ChatMessage, ChatSession
from tasks.aging import ColdStore
from tasks.files import MemoryRoot, durable

_ALL_TIME = (EARLIEST, datetime(9999, 1, 1, tzinfo=UTC))


def _hot_memories(engine: Engine, namespace: str) -> pa.Table:
    parts: list[pa.Table] = []
    after = 0
    with MemoryReader(engine) as reader:
        while True:
            part = fetch_memories(
                reader, namespace, _ALL_TIME, Page(after, 50_000), with_pinned=True
            )
            if part.num_rows == 0:
                return pa.concat_tables(parts) if parts else MEMORY_SCHEMA.empty_table()
            parts.append(part)
            after = int(part.column("id")[-1].as_py())


def _sessions(session: Session, namespace: str) -> dict[str, str]:
    """Each live session as transcript JSONL (session line, then its messages)."""
    out: dict[str, list[str]] = {}
    for s in session.execute(
        select(ChatSession).where(ChatSession.namespace == namespace)
    ).scalars():
        head = {"type": "session", "id": s.id, "namespace": s.namespace, "agent": s.agent}
        out[s.id] = [json.dumps(head | {"kind": s.kind, "title": s.title}, ensure_ascii=False)]
    stmt = (
        select(ChatMessage)
        .join(ChatSession, ChatSession.id == ChatMessage.session_id)
        .where(ChatSession.namespace == namespace)
        .order_by(ChatMessage.session_id, ChatMessage.ts, ChatMessage.id)
    )
    for m in session.execute(stmt).scalars():
        line = {"type": "message", "id": m.id, "role": m.role, "speaker": m.speaker}
        line |= {"content": m.content, "timestamp": m.ts.isoformat()}
        out[m.session_id].append(json.dumps(line, ensure_ascii=False))
    return {sid: "\n".join(lines) + "\n" for sid, lines in out.items()}


def _episodes(session: Session, namespace: str) -> str:
    rows = session.execute(select(Episode).where(Episode.namespace == namespace)).scalars()
    keep = ("session_id", "summary", "topics", "entities", "user_state", "outcomes")
    lines = [
        json.dumps({k: getattr(e, k) for k in keep} | {"ended_at": e.ended_at.isoformat()})
        for e in rows
    ]
    return "".join(f"{line}\n" for line in lines)


def _documents(session: Session, namespace: str) -> str:
    """One line per document: where it came from, its text, and its chunks' spans."""
    spans: dict[int, list[dict[str, Any]]] = {}
    for c in session.execute(
        select(DocumentChunk)
        .where(DocumentChunk.namespace == namespace)
        .order_by(DocumentChunk.document_id, DocumentChunk.ordinal)
    ).scalars():
        span = ("ordinal", "heading", "char_start", "char_end", "importance")
        spans.setdefault(c.document_id, []).append({k: getattr(c, k) for k in span})
    lines = []
    for d in documents_of(session, namespace):
        keep = ("id", "uri", "title", "tag", "format", "content_hash", "text")
        line = {k: getattr(d, k) for k in keep} | {"ingested_at": d.ingested_at.isoformat()}
        lines.append(json.dumps(line | {"chunks": spans.get(d.id, [])}, ensure_ascii=False))
    return "".join(f"{line}\n" for line in lines)


def _put(fs: AbstractFileSystem, path: str, data: bytes | memoryview) -> None:
    durable.put(fs, path, data)  # the namespace is erased after the export


def _memory_files(fs: AbstractFileSystem, base: str, root: MemoryRoot, namespace: str) -> int:
    """Copy the namespace's memory files under ``<base>/files/``; how many."""
    folder = root.path(namespace).rstrip("/") + "/"  # never a look-alike's ("alice2/")
    listed = root.fs.find(folder) if root.fs.exists(folder) else []
    found = sorted(p for p in listed if p.startswith(folder))
    for path in found:
        _put(fs, f"{base}/files/{path[len(folder) :]}", root.fs.cat_file(path))
    return len(found)


def export_namespace(
    engine: Engine,
    cold: ColdStore,
    memory: MemoryRoot,
    namespace: str,
    url: str,
    options: dict[str, Any],
) -> dict[str, int]:
    """Write the namespace's bundle under ``<url>/<namespace>/``; returns its counts."""
    fs, root = fsspec.core.url_to_fs(url, **options)
    base = f"{root.rstrip('/')}/{namespace}"
    hot = _hot_memories(engine, namespace)
    encoded = pa.BufferOutputStream()
    pq.write_table(hot, encoded, compression="zstd")
    _put(fs, f"{base}/memories.parquet", memoryview(encoded.getvalue()))
    with Session(engine) as session:
        sessions = _sessions(session, namespace)
        episodes = _episodes(session, namespace)
        documents = _documents(session, namespace)
        files = archive.manifests(session, namespace=namespace, statuses=["committed"])
    for sid, body in sessions.items():
        _put(fs, f"{base}/sessions/{quote(sid, safe='')}.jsonl", body.encode("utf-8"))
    _put(fs, f"{base}/episodes.jsonl", episodes.encode("utf-8"))
    _put(fs, f"{base}/documents.jsonl", documents.encode("utf-8"))
    for entry in files:
        folder = "archived" if entry.kind == archive.MEMORIES else "transcripts"
        name = entry.uri.rsplit("/", 1)[-1]
        _put(
            fs, f"{base}/{folder}/{entry.year}-{name}", cold.fs.cat_file(cold.local_path(entry.uri))
        )
    counts = {
        "memories": hot.num_rows,
        "archived_memories": sum(e.row_count for e in files if e.kind == archive.MEMORIES),
        "transcript_messages": sum(e.row_count for e in files if e.kind == archive.TRANSCRIPT),
        "sessions": len(sessions),
        "episodes": episodes.count("\n"),
        "documents": documents.count("\n"),
        "memory_files": _memory_files(fs, base, memory, namespace),
    }
    _put(fs, f"{base}/bundle.json", json.dumps({"namespace": namespace, **counts}).encode())
    return counts
