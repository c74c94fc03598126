"""The sections of ``archivist status`` read from the store: runs, queue, memories and
documents per namespace, the last quality report; as lines and as data."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.settings import Settings

TOP_NAMESPACES = 20
TITLES = [
    "Runs (runs table)",
    "Write queue",
    "Memories per tier",
    "Documents",
    "Last quality report",
]


def when(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "-"
    minutes = int((now - moment).total_seconds() // 60)
    ago = f"{minutes} min ago" if abs(minutes) < 120 else f"{minutes // 60} h ago"
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({ago})"


def runs_lines(conn: Connection, now: datetime) -> list[str]:
    from storage.operations.status import crashed_runs, last_runs

    rows = last_runs(conn)
    lines = [
        f"{r.flow:<28} {r.status:<10} {when(r.started_at, now)}, as of {r.as_of:%Y-%m-%d %H:%M}"
        for r in rows
    ] or ["no runs recorded yet"]
    crashed = crashed_runs(conn)
    if crashed is not None:
        lines.append(
            f"crashed runs: {crashed.count}; last: {crashed.flow} started "
            f"{when(crashed.started_at, now)}: {crashed.reason or 'no reason recorded'}"
        )
    return lines


def queue_lines(conn: Connection, now: datetime) -> list[str]:
    from storage.operations.status import queue_overview, table_exists

    if not table_exists(conn, "memory_write_queue"):
        return ["n/a (no memory_write_queue table: run `archivist db upgrade`)"]
    queue = queue_overview(conn)
    counts = ", ".join(f"{s} {n}" for s, n in sorted(queue.by_status.items())) or "empty"
    oldest = when(queue.oldest_pending, now) if queue.oldest_pending else "none pending"
    dead = queue.by_status.get("dead", 0)
    return [counts, f"oldest pending: {oldest}", f"dead: {dead}"]


def memory_lines(conn: Connection) -> list[str]:
    from storage.kernel.tiers import TIERS
    from storage.operations.status import memory_counts

    counts = memory_counts(conn)
    ranked = sorted(counts.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    header = f"{'namespace':<28} " + " ".join(f"{t:>10}" for t in TIERS) + f" {'total':>10}"
    lines = [header]
    for namespace, tiers in ranked[:TOP_NAMESPACES]:
        lines.append(_count_row(namespace, tiers, TIERS))
    if len(ranked) > TOP_NAMESPACES:
        lines.append(f"... {len(ranked) - TOP_NAMESPACES} more namespaces")
    totals = {t: sum(tiers.get(t, 0) for _, tiers in ranked) for t in TIERS}
    lines.append(_count_row(f"total ({len(ranked)} namespaces)", totals, TIERS))
    return lines


def _count_row(label: str, tiers: dict[str, int], order: tuple[str, ...]) -> str:
    cells = " ".join(f"{tiers.get(t, 0):>10}" for t in order)
    return f"{label:<28} {cells} {sum(tiers.values()):>10}"


def quality_lines(conn: Connection, now: datetime) -> list[str]:
    from sqlalchemy.orm import Session

    from storage.operations.status import table_exists
    from storage.quality_runs import latest_quality_run

    if not table_exists(conn, "quality_runs"):
        return ["n/a (no quality_runs table: run `archivist db upgrade`)"]
    with Session(bind=conn) as session:
        last = latest_quality_run(session)
    if last is None:
        return ["no quality run yet (run `archivist quality`)"]
    verdict = "passed" if last.success else f"FAILED ({last.critical_failures} critical)"
    lines = [f"{verdict}, {when(last.run_at, now)}, as of {last.as_of:%Y-%m-%d %H:%M}"]
    for suite, c in last.suite_results.items():
        lines.append(
            f"{suite:<16} {c.get('evaluated', 0)} evaluated, {c.get('failed', 0)} failed,"
            f" {c.get('critical', 0)} critical"
        )
    lines.append(f"Data Docs: {last.data_docs_uri or '-'}")
    return lines


def document_lines(conn: Connection) -> list[str]:
    from storage.operations.status import document_counts

    counts = document_counts(conn)
    if not counts:
        return ["no documents (archivist docs ingest NS PATH)"]
    ranked = sorted(counts.items(), key=lambda item: (-item[1][1], item[0]))
    lines = [f"{'namespace':<28} {'documents':>10} {'chunks':>10}"]
    top = ranked[:TOP_NAMESPACES]
    lines += [f"{ns:<28} {docs:>10} {chunks:>10}" for ns, (docs, chunks) in top]
    if len(ranked) > TOP_NAMESPACES:
        lines.append(f"... {len(ranked) - TOP_NAMESPACES} more namespaces")
    documents, chunks = (sum(c[i] for c in counts.values()) for i in (0, 1))
    lines.append(f"{f'total ({len(ranked)} namespaces)':<28} {documents:>10} {chunks:>10}")
    return lines


def store_sections(settings: Settings, now: datetime) -> list[tuple[str, list[str]]]:
    """The sections read from the store; one n/a line each when it cannot be reached."""
    from storage.operations.status import table_exists
    from storage.server.engine import open_store

    titles = TITLES
    try:
        store = open_store(settings)
    except (StorageError, ConfigurationError) as exc:
        return [(title, [f"n/a ({exc})"]) for title in titles]
    with store.engine.connect() as conn:
        if not table_exists(conn, "memories"):
            why = "n/a (the store has no Archivist schema: run `archivist db upgrade`)"
            return [(title, [why]) for title in titles]
        return [
            (titles[0], runs_lines(conn, now)),
            (titles[1], queue_lines(conn, now)),
            (titles[2], memory_lines(conn)),
            (titles[3], document_lines(conn)),
            (titles[4], quality_lines(conn, now)),
        ]


def store_data(settings: Settings) -> dict[str, Any]:
    """The store's sections as data; a section that cannot be read is ``{"unavailable": why}``."""
    from sqlalchemy.orm import Session

    from storage.operations import status
    from storage.quality_runs import latest_quality_run
    from storage.server.engine import open_store

    names = ("runs", "queue", "memories", "documents", "quality")
    try:
        store = open_store(settings)
    except (StorageError, ConfigurationError) as exc:
        return dict.fromkeys(names, {"unavailable": str(exc)})
    with store.engine.connect() as conn:
        tables = ("memories", "memory_write_queue", "quality_runs", "documents")
        missing = [t for t in tables if not status.table_exists(conn, t)]
        if missing:
            why = {"unavailable": f"no table {', '.join(missing)}: run `archivist db upgrade`"}
            return dict.fromkeys(names, why)
        counts = status.memory_counts(conn)
        queue = status.queue_overview(conn)
        crashed = status.crashed_runs(conn)
        with Session(bind=conn) as session:
            quality = latest_quality_run(session)
        return {
            "runs": {
                "last": [r.__dict__ for r in status.last_runs(conn)],
                "crashed": crashed and crashed.__dict__,
            },
            "queue": {**queue.__dict__, "dead": queue.by_status.get("dead", 0)},
            "memories": {"namespaces": counts, "totals": _totals(counts)},
            "documents": {
                ns: {"documents": docs, "chunks": chunks}
                for ns, (docs, chunks) in status.document_counts(conn).items()
            },
            "quality": quality and _quality(quality),
        }


def _totals(counts: dict[str, dict[str, int]]) -> dict[str, int]:
    from storage.kernel.tiers import TIERS

    return {t: sum(tiers.get(t, 0) for tiers in counts.values()) for t in TIERS}


def _quality(run: Any) -> dict[str, Any]:
    keep = ("success", "critical_failures", "run_at", "as_of", "suite_results", "data_docs_uri")
    return {k: getattr(run, k) for k in keep}
