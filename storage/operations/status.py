"""Read-only overview queries behind ``archivist status``: runs, queue, memory and document
counts, and which namespaces the store knows (the CLI's hint for a namespace typed wrong)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

TABLE_EXISTS = text("SELECT to_regclass(:name) IS NOT NULL")
LAST_RUN_PER_FLOW = text(
    """
    SELECT DISTINCT ON (flow) flow, status, as_of, started_at, finished_at
    FROM runs ORDER BY flow, started_at DESC
    """
)
LAST_CRASHED = text(
    """
    SELECT count(*) OVER (), flow, started_at, report ->> 'reason'
    FROM runs WHERE status = 'crashed' ORDER BY started_at DESC LIMIT 1
    """
)
QUEUE_BY_STATUS = text("SELECT status, count(*) FROM memory_write_queue GROUP BY status")
OLDEST_PENDING = text("SELECT min(available_at) FROM memory_write_queue WHERE status = 'pending'")
MEMORIES_BY_NAMESPACE_TIER = text(
    """
    SELECT namespace, tier, count(*) AS n FROM memories GROUP BY namespace, tier
    """
)
DOCUMENTS_BY_NAMESPACE = text(
    """
    SELECT d.namespace, count(*), coalesce(sum(c.n), 0)
    FROM documents d
    LEFT JOIN (SELECT document_id, count(*) AS n FROM document_chunks GROUP BY document_id) c
        ON c.document_id = d.id
    GROUP BY d.namespace
    """
)
HOLDS_ANYTHING = text(
    """
    SELECT EXISTS (SELECT 1 FROM memories WHERE namespace = :ns)
        OR EXISTS (SELECT 1 FROM chat_sessions WHERE namespace = :ns)
        OR EXISTS (SELECT 1 FROM documents WHERE namespace = :ns)
    """
)
KNOWN_NAMESPACES = text(
    """
    SELECT namespace FROM memories UNION SELECT namespace FROM chat_sessions
    UNION SELECT namespace FROM documents ORDER BY 1 LIMIT :limit
    """
)


@dataclass(frozen=True)
class RunRow:
    flow: str
    status: str
    as_of: datetime
    started_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class CrashedRuns:
    """How many runs were found dead (``crashed``), and the newest of them."""

    count: int
    flow: str
    started_at: datetime
    reason: str | None


@dataclass(frozen=True)
class QueueOverview:
    by_status: dict[str, int]
    oldest_pending: datetime | None


def table_exists(conn: Connection, name: str) -> bool:
    return bool(conn.execute(TABLE_EXISTS, {"name": name}).scalar())


def last_runs(conn: Connection) -> list[RunRow]:
    """The newest ``runs`` row of every flow that wrote one."""
    return [RunRow(*row) for row in conn.execute(LAST_RUN_PER_FLOW)]


def crashed_runs(conn: Connection) -> CrashedRuns | None:
    """The runs marked ``crashed``, or None if there is none."""
    row = conn.execute(LAST_CRASHED).first()
    return None if row is None else CrashedRuns(*row)


def queue_overview(conn: Connection) -> QueueOverview:
    """Items per status and the oldest pending item's due time."""
    by_status = {str(status): int(n) for status, n in conn.execute(QUEUE_BY_STATUS)}
    return QueueOverview(by_status, conn.execute(OLDEST_PENDING).scalar())


def memory_counts(conn: Connection) -> dict[str, dict[str, int]]:
    """Memories per namespace and tier."""
    counts: dict[str, dict[str, int]] = {}
    for namespace, tier, n in conn.execute(MEMORIES_BY_NAMESPACE_TIER):
        counts.setdefault(str(namespace), {})[str(tier)] = int(n)
    return counts


def document_counts(conn: Connection) -> dict[str, tuple[int, int]]:
    """Documents and their chunks per namespace."""
    rows = conn.execute(DOCUMENTS_BY_NAMESPACE)
    return {str(ns): (int(docs), int(chunks)) for ns, docs, chunks in rows}


def holds_anything(conn: Connection, namespace: str) -> bool:
    """Whether ``namespace`` has a memory, a session or a document."""
    return bool(conn.execute(HOLDS_ANYTHING, {"ns": namespace}).scalar())


def known_namespaces(conn: Connection, limit: int = 20) -> list[str]:
    """The first ``limit`` namespaces that hold memories, sessions or documents, by name."""
    return [str(ns) for ns in conn.execute(KNOWN_NAMESPACES, {"limit": limit}).scalars()]
