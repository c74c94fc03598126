"""Erasure of one session: its rows and every row derived from its text.

Derived from a session, besides its own memories, episode, state, messages and blocks:

- the long-term entries (the lines of ``MEMORY.md``) built from its memories, found by
  the session (``session_ids``: a later state of the session replaced the memories the
  entry cites) or by a memory id, and the ``long_term`` memory of each, which search
  returns;
- the searches that returned one of those memories (``memory_access_log``);
- the cached vectors of those memories' texts;
- the queued writes into the session (their payload holds its id and text);
- the namespace's counts of common words (``namespace_terms``, large namespaces only),
  counted again without it: a word only the session used goes.
- the namespace's stored size (``namespace_sizes``, large namespaces only): search counts
  the namespace whole until the index step stores it again.

The caller runs ``purge_session_rows`` in one transaction with the changes to the files
(``tasks.privacy``), and ``weekly_summaries`` tells it which weekly summaries to rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import TURN_HASHES_SQL
from storage.operations.privacy import table_exists

SESSION_NAMESPACE = text("SELECT namespace FROM chat_sessions WHERE id = :session_id")
SESSION_MEMORY_IDS = text("SELECT id FROM memories WHERE session_id = :session_id")
# Long-term entries built (partly) from the session: their text came from it.
PURGE_LONG_TERM = text(
    """
    DELETE FROM long_term_entries
    WHERE memory_ids && CAST(:ids AS bigint[])
       OR session_ids @> ARRAY[CAST(:session_id AS text)]
    RETURNING memory_id, text, status
    """
)
# The session's memories, and the long_term memories of its entries (``:long_term``).
_OWN = "session_id = :session_id OR id = ANY(CAST(:long_term AS bigint[]))"
PURGE_SESSION = {
    "embedding_cache": text(
        "DELETE FROM embedding_cache WHERE text_hash IN ("
        " SELECT encode(sha256(convert_to(content, 'UTF8')), 'hex')"
        f" FROM memories WHERE {_OWN}"
        f" UNION ALL {TURN_HASHES_SQL} m.session_id = :session_id)"
    ),
    "memories": text(f"DELETE FROM memories WHERE {_OWN}"),
    "episodes": text("DELETE FROM episodes WHERE session_id = :session_id"),
    "processed_sessions": text("DELETE FROM processed_sessions WHERE session_id = :session_id"),
    "chat_messages": text("DELETE FROM chat_messages WHERE session_id = :session_id"),
    "chat_sessions": text("DELETE FROM chat_sessions WHERE id = :session_id"),
}
# Queued writes into the session: a memory for it, or a message of it.
PURGE_QUEUE = text(
    "DELETE FROM memory_write_queue "
    "WHERE payload->>'session_id' = :session_id OR payload->'session'->>'id' = :session_id"
)
# The namespace's common words counted again over the memories left (after the deletes);
# the rows of words no memory holds any more go. The UPDATE and the DELETE touch disjoint
# rows, so running them in one statement is safe.
HAS_TERMS = text("SELECT EXISTS (SELECT 1 FROM namespace_terms WHERE namespace = :namespace)")
RECOUNT_TERMS = text(
    """
    WITH counted AS (
        SELECT word, ndoc FROM ts_stat(
            format('SELECT tsv FROM memories WHERE namespace = %L', CAST(:namespace AS text)))
    ), kept AS (
        UPDATE namespace_terms t SET df = c.ndoc FROM counted c
        WHERE t.namespace = :namespace AND t.lexeme = c.word
        RETURNING t.lexeme
    )
    DELETE FROM namespace_terms t
    WHERE t.namespace = :namespace AND t.lexeme NOT IN (SELECT lexeme FROM kept)
    """
)
FORGET_SIZES = text("DELETE FROM namespace_sizes WHERE namespace = :namespace")
# The searches that returned one of the session's memories, hot or archived (migration
# 0020: one row per search, its hits' ids).
PURGE_ACCESS_LOG = text(
    "DELETE FROM memory_access_log "
    "WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace) "
    "AND memory_ids && CAST(:ids AS bigint[])"
)
# The session's blocks, by key prefix: ``daily:<session>@``, ``task:<session>@`` and its
# timeline lines, ``session:<session>@``.
_BLOCKS_OF_SESSION = (
    "left(block_key, length(:daily)) = :daily OR left(block_key, length(:task)) = :task "
    "OR left(block_key, length(:session)) = :session"
)
PURGE_BLOCKS = text(
    f"DELETE FROM memory_file_blocks WHERE {_BLOCKS_OF_SESSION} RETURNING path, block_key"
)
SESSION_BLOCK_PATHS = text(
    f"SELECT DISTINCT path FROM memory_file_blocks WHERE {_BLOCKS_OF_SESSION}"
)


@dataclass
class PurgedRows:
    """What ``purge_session_rows`` deleted: counts per table, the blocks (path and key) to
    cut from the memory files, and the lines of ``MEMORY.md`` that go (entries' texts)."""

    counts: dict[str, int] = field(default_factory=dict)
    blocks: list[tuple[str, str]] = field(default_factory=list)
    memory_md_lines: list[str] = field(default_factory=list)


def session_namespace(session: Session, session_id: str) -> str | None:
    value = session.execute(SESSION_NAMESPACE, {"session_id": session_id}).scalar()
    return None if value is None else str(value)


def _block_prefixes(session_id: str) -> dict[str, str]:
    return {kind: f"{kind}:{session_id}@" for kind in ("daily", "task", "session")}


def session_block_paths(session: Session, session_id: str) -> list[str]:
    """The memory files that hold (or will hold) blocks of the session."""
    return list(session.execute(SESSION_BLOCK_PATHS, _block_prefixes(session_id)).scalars())


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0))


def _purge_long_term(
    session: Session, session_id: str, ids: list[int], out: PurgedRows
) -> list[int]:
    """Delete the session's long-term entries; returns their long_term memories' ids."""
    if not table_exists(session, "long_term_entries"):
        return []
    params = {"ids": ids, "session_id": session_id}
    entries = session.execute(PURGE_LONG_TERM, params).all()
    out.counts["long_term_entries"] = len(entries)
    out.memory_md_lines = [e.text for e in entries if e.status == "in"]
    return [int(e.memory_id) for e in entries if e.memory_id is not None]


def purge_session_rows(
    session: Session, session_id: str, namespace: str | None, archived_ids: Sequence[int] = ()
) -> PurgedRows:
    """Delete one session and everything derived from it; ``namespace``: the session's
    (None: not known, every namespace's access log is searched), ``archived_ids``: its
    memories that were archived."""
    out = PurgedRows()
    params: dict[str, Any] = {"session_id": session_id}
    ids = list(session.execute(SESSION_MEMORY_IDS, params).scalars())
    params["long_term"] = _purge_long_term(session, session_id, ids, out)
    logged = [*ids, *archived_ids, *params["long_term"]]
    gone = PURGE_ACCESS_LOG, {"namespace": namespace, "ids": logged}
    out.counts["memory_access_log"] = _rowcount(session.execute(*gone)) if logged else 0
    out.blocks = [
        (r.path, r.block_key) for r in session.execute(PURGE_BLOCKS, _block_prefixes(session_id))
    ]
    out.counts["memory_file_blocks"] = len(out.blocks)
    for table, statement in PURGE_SESSION.items():
        out.counts[table] = _rowcount(session.execute(statement, params))
    if table_exists(session, "memory_write_queue"):
        queued = session.execute(PURGE_QUEUE, {"session_id": session_id})
        out.counts["memory_write_queue"] = _rowcount(queued)
    out.counts["namespace_terms"] = _recount_terms(session, namespace)
    if namespace is not None and table_exists(session, "namespace_sizes"):
        sizes = session.execute(FORGET_SIZES, {"namespace": namespace})
        out.counts["namespace_sizes"] = _rowcount(sizes)
    return out


def _recount_terms(session: Session, namespace: str | None) -> int:
    """Recount the namespace's common words without the session; how many words went."""
    if namespace is None or not table_exists(session, "namespace_terms"):
        return 0
    if not session.execute(HAS_TERMS, {"namespace": namespace}).scalar_one():
        return 0
    return _rowcount(session.execute(RECOUNT_TERMS, {"namespace": namespace}))
