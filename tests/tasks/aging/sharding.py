"""Ageing split into shards: a store of several namespaces with work for every step, the
ageing recipe as plain functions, and what a store holds (content, not surrogate ids)."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.shards import Scope, Shard
from storage.operations.aging import DecayParams
from storage.server.engine import Store
from tasks.aging import ColdStore, archive_old, compress_old, cutoffs, decay, delete_old
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import AS_OF, DENTIST, LONG_AGO, MONTHS_AGO, synced_session

# Shards of 4: bob and carol 1/4, erin 2/4, alice 3/4, dave 4/4 (pinned in test_shards).
NAMESPACES = ("alice", "bob", "carol", "dave", "erin")
ANCIENT = datetime(2024, 9, 10, 9, 0, tzinfo=UTC)  # 801 days before AS_OF: past deletion


def seed(store: Store, cold: ColdStore) -> None:
    """Per namespace: a session for each of deletion, archival and compression, old notes
    to archive (a few files' worth) and a recent one to decay; and an ageing 100 days
    earlier without deletion, so every namespace has transcripts and archived rows (some
    of them already past deletion) when the ageing under test runs; then a back-filled
    hot row past deletion."""
    for ns in NAMESPACES:
        synced_session(store, f"{ns}-ancient", ns, ANCIENT, DENTIST)
        synced_session(store, f"{ns}-old", ns, LONG_AGO)
        synced_session(store, f"{ns}-mid", ns, MONTHS_AGO)
        put(store, ns, [f"{ns} old note {i}" for i in range(6)], AS_OF - timedelta(days=400))
        put(store, ns, [f"{ns} recent note"], AS_OF - timedelta(days=20), access_count=2)
    age(store, cold, as_of=AS_OF - timedelta(days=100), deletion=False)
    for ns in NAMESPACES:  # hot rows past deletion in every namespace, once that ageing ran
        put(store, ns, [f"{ns} back-filled ancient note"], ANCIENT)


def age(
    store: Store,
    cold: ColdStore,
    shard: Shard | None = None,
    *,
    as_of: datetime = AS_OF,
    deletion: bool = True,
) -> None:
    """``memory-aging``'s recipe as plain functions; small archive batches, so a
    namespace's old rows go to several files."""
    policy, when = store.settings.aging, cutoffs(as_of, store.settings.aging)
    params = DecayParams(as_of, policy.half_life_days, policy.salience_epsilon, Scope(shard=shard))
    decay(store.engine, params, batch=policy.decay_batch)
    embedder = HashingEmbedder(store.settings.embedding.dim)
    compress_old(store.engine, cold, embedder, when.compress, 500, Scope(shard=shard))
    archive_old(store.engine, cold, when.archive, 4, Scope(shard=shard))
    delete_old(store.engine, cold, when.delete, Scope(shard=shard), enabled=deletion)


# Each query's first column is the namespace. No surrogate id: memories are told apart by
# their content, episodes by their session.
CONTENT = {
    "memories": "SELECT namespace, kind, content, content_key, tier, pinned, access_count, "
    "salience, session_id, message_ids, occurred_at, last_accessed_at, embedding::text "
    "FROM memories",
    "episodes": "SELECT e.namespace, e.session_id, e.summary, e.salience, e.last_accessed_at, "
    "m.content FROM episodes e LEFT JOIN memories m ON m.id = e.memory_id",
    "sessions": "SELECT namespace, id, title FROM chat_sessions",
    "messages": "SELECT s.namespace, c.session_id, c.id, c.content, c.ts "
    "FROM chat_messages c JOIN chat_sessions s ON s.id = c.session_id",
    "processed": "SELECT namespace, session_id, last_message_at FROM processed_sessions",
    "archived": "SELECT namespace, session_id, occurred_at FROM archived_memories",
    "manifests": "SELECT namespace, kind, year, row_count, session_id, last_at, status, uri "
    "FROM archive_manifest",
}
# Row versions: a row rewritten with the same values has a new one.
VERSIONS = {
    table: f"SELECT namespace, xmin::text FROM {table}"
    for table in (
        "memories",
        "episodes",
        "chat_sessions",
        "processed_sessions",
        "archived_memories",
        "archive_manifest",
    )
} | {
    "chat_messages": "SELECT s.namespace, c.xmin::text FROM chat_messages c "
    "JOIN chat_sessions s ON s.id = c.session_id"
}
# A memories file is named by the ids it holds, and a rewrite adds a random suffix.
_PART = re.compile(r"part-\d+-\d+(-r[0-9a-f]{8})?\.parquet$")


def _relative(cold: ColdStore, uri: str) -> str:
    path = cold.local_path(uri).removeprefix(cold.root.rstrip("/") + "/")
    return _PART.sub("part.parquet", path)


def _sorted(rows: list[Any]) -> list[Any]:
    return sorted(rows, key=repr)


def state(store: Store, cold: ColdStore, *, versions: bool = False) -> dict[str, Any]:
    """What the store and its cold tier hold, by namespace: each table's rows and each
    cold file's rows (a memories file without its ids), sorted. ``versions``: the rows'
    versions and the files' modification times instead."""
    out: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    with store.engine.connect() as conn:
        for table, sql in (VERSIONS if versions else CONTENT).items():
            for ns, *row in conn.execute(text(sql)):
                if table == "manifests":
                    row[-1] = _relative(cold, row[-1])
                out[ns][table].append(tuple(row))
    for path in cold.fs.find(cold.root) if cold.fs.exists(cold.root) else []:
        ns = re.search(r"/namespace=([^/]+)/", path)
        assert ns is not None, path
        if versions:
            content: list[Any] = [os.stat(path).st_mtime_ns]
        else:
            rows = cold.read(cold.uri(path)).to_pylist()
            if "/memories/" in path:
                rows = [{k: v for k, v in row.items() if k != "id"} for row in rows]
            content = [repr(sorted(row.items())) for row in rows]
        out[ns.group(1)]["files"].append((_relative(cold, cold.uri(path)), _sorted(content)))
    return {ns: {t: _sorted(rows) for t, rows in tables.items()} for ns, tables in out.items()}
