"""Test helpers: write raw sessions, run the sync steps as plain functions, read the store."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict, Unpack

from sqlalchemy import Connection, Engine, text
from sqlalchemy.orm import Session

from storage.embedding import Embedder, HashingEmbedder
from storage.kernel.records import MessageRecord, SessionRecord
from storage.kernel.shards import Shard
from storage.server.engine import Store
from storage.sessions import record_messages, record_session
from tasks.extraction import HeuristicExtractor, summary_embedder
from tasks.files import FlushOutcome, flush_blocks, open_memory_root
from tasks.sync import BatchOutcome, SyncContext, SyncPlan, plan_sync, process_batch


class SessionFields(TypedDict, total=False):
    """A test session's fields beyond its id and namespace (defaults: direct, aria)."""

    kind: str
    agent: str
    title: str | None
    first_index: int


def add_session(
    store: Store,
    session_id: str,
    namespace: str,
    turns: Sequence[tuple[str, str, datetime]],
    **fields: Unpack[SessionFields],
) -> None:
    """Record a session and its (role, content, time) turns as messages m<index>."""
    kind, agent = fields.get("kind", "direct"), fields.get("agent", "aria")
    title, first_index = fields.get("title"), fields.get("first_index", 0)
    speakers = {"user": "Alice", "assistant": agent, "tool": "bash", "system": "system"}
    record = SessionRecord(id=session_id, namespace=namespace, agent=agent, kind=kind, title=title)
    messages = [
        MessageRecord(
            id=f"m{first_index + i}",
            role=role,
            speaker=speakers[role],
            content=content,
            timestamp=ts,
        )
        for i, (role, content, ts) in enumerate(turns)
    ]
    with Session(store.engine) as session, session.begin():
        record_session(session, record)
        record_messages(session, session_id, messages)


def chat(start: datetime, *texts: str, step_minutes: int = 2) -> list[tuple[str, str, datetime]]:
    """Alternate user/assistant turns starting with the user."""
    roles = ("user", "assistant")
    return [
        (roles[i % 2], body, start + timedelta(minutes=step_minutes * i))
        for i, body in enumerate(texts)
    ]


@dataclass
class SyncResult:
    plan: SyncPlan
    written: BatchOutcome
    flushed: FlushOutcome


class SyncKnobs(TypedDict, total=False):
    """What a test sync may set; each defaults as the daily sync does (the hashing
    embedder, batches of 500, files written)."""

    window_hours: float
    min_user_messages: int
    namespace: str | None
    embedder: Embedder | None
    batch_size: int
    flush: bool
    turn_context: bool
    dry_run: bool
    idle_minutes: float | None
    shard: Shard | None


def run_sync(store: Store, as_of: datetime, **knobs: Unpack[SyncKnobs]) -> SyncResult:
    """The flow's recipe as plain function calls (no Prefect)."""
    window_hours = knobs.get("window_hours", 26)
    min_user_messages = knobs.get("min_user_messages", 2)
    namespace, embedder, shard = knobs.get("namespace"), knobs.get("embedder"), knobs.get("shard")
    batch_size, flush = knobs.get("batch_size", 500), knobs.get("flush", True)
    dry_run, idle_minutes = knobs.get("dry_run", False), knobs.get("idle_minutes")
    embedder = embedder or HashingEmbedder(store.settings.embedding.dim)
    ctx = SyncContext(
        # as make_extractor: summaries rank sentences with the local model, never a remote one
        extractor=HeuristicExtractor(summary_embedder(store.settings.embedding), store.settings.tz),
        embedder=embedder,
        as_of=as_of,
        tz=store.settings.tz,
        run_id=None,
        dry_run=dry_run,
        half_life_days=store.settings.aging.half_life_days,
        turn_context=knobs.get("turn_context", store.settings.embedding.turn_context),
    )
    with Session(store.engine) as session:
        plan = plan_sync(
            session, as_of, window_hours, min_user_messages, namespace, idle_minutes, shard
        )
    written = BatchOutcome()
    work = plan.to_process
    for i in range(0, len(work), batch_size):
        with Session(store.engine) as session, session.begin():
            written.merge(process_batch(session, ctx, work[i : i + batch_size]))
    flushed = (
        flush_blocks(store.engine, open_memory_root(store.settings), shard=shard)
        if flush
        else FlushOutcome()
    )
    return SyncResult(plan, written, flushed)


TABLES = (
    "chat_sessions",
    "chat_messages",
    "memories",
    "episodes",
    "processed_sessions",
    "memory_file_blocks",
)


def counts(store: Store) -> dict[str, int]:
    """Row count of every table the sync touches."""
    with store.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def snapshot(store: Store) -> dict[str, Any]:
    """Content of the store that must not depend on how many runs produced it (ids excluded)."""
    queries = {
        "memories": "SELECT namespace, kind, content, session_id, message_ids, occurred_at "
        "FROM memories ORDER BY 1, 4, 2, 3",
        "episodes": "SELECT session_id, summary, fingerprint, topics FROM episodes ORDER BY 1",
        "processed": "SELECT session_id, fingerprint FROM processed_sessions ORDER BY 1",
        "blocks": "SELECT path, block_key, written_at IS NOT NULL FROM memory_file_blocks "
        "ORDER BY 2",
    }
    with store.engine.connect() as conn:
        return {k: [tuple(r) for r in conn.execute(text(q))] for k, q in queries.items()}


def files(root: Path, *, drop_ids: bool = False) -> dict[str, str]:
    """Every memory file under root (Markdown and timeline); optionally with the memory-id
    lists and run ids blanked out."""
    import re

    out = {}
    for path in sorted([*root.rglob("*.md"), *root.rglob("*.jsonl")]):
        body = path.read_text("utf-8")
        if drop_ids:
            body = re.sub(r"memories=[0-9,]*", "memories=…", body)
            body = re.sub(r'"memory_ids": \[[0-9, ]*\]', '"memory_ids": […]', body)
            body = re.sub(r'"run": ("[0-9a-f-]*"|null)', '"run": …', body)
        out[str(path.relative_to(root))] = body
    return out


def modules_after_import(module: str) -> set[str]:
    """The modules a fresh interpreter holds after importing ``module`` (and ``json`` and
    ``sys``, to say so), for tests of what an import leaves out."""
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout))


def final_bar(stderr: str, label: str) -> list[str]:
    """The last drawn state of the progress bar ``label`` in a terminal's stderr, as words."""
    import re

    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stderr)
    frames = [line for line in re.split(r"[\r\n]", plain) if line.startswith(label)]
    assert frames, f"no bar {label!r} in {plain[-2000:]!r}"
    return frames[-1][len(label) :].split()


def pseudonym(store: Store, namespace: str) -> str:
    """What reports, logs and Prefect call the namespace (``storage.pseudonyms``)."""
    from storage.pseudonyms import namespace_pseudonym

    with Session(store.engine) as session, session.begin():
        return namespace_pseudonym(session, namespace)


def new_key(store: Store, namespace: str, *, read_only: bool = False) -> str:
    """A new key of ``namespace``, created as the store's own role (the owner)."""
    from storage.keys import create_key

    with Session(store.engine) as session, session.begin():
        return create_key(session, namespace, read_only=read_only)[1]


@contextmanager
def scoped(
    engine: Engine, store: Store, namespace: str, *, write: bool = False
) -> Iterator[Connection]:
    """A transaction of ``engine`` scoped to ``namespace`` by a new key of it, as the API
    scopes one (``storage.keys.resolve_key``)."""
    from storage.keys import resolve_key

    key = new_key(store, namespace)
    with engine.begin() as conn:
        assert resolve_key(conn, key, write=write) is not None
        yield conn
