"""``archivist status`` (one screen: runs, queue, memories, quality) and ``archivist quality``.

Every section degrades to ``n/a (why)`` when its table, the store or the Prefect API is
missing. The first line says which Prefect API flow commands would use and whether it
answers a health check (0.5 s): the configured one, or else the local server that flow
commands start and keep (``deployments.local_prefect``). Its runs are listed when it
answered; status never starts a server just to ask. Prefect itself is imported only to
list those runs, or to read the URL when a project settings file may set it, so
``status`` starts fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click
from sqlalchemy import Connection

from deployments.prefect_api import ApiCheck, check_api, configured_api_url
from deployments.settings_loader import load_settings
from storage.config import Settings
from storage.errors import ConfigurationError, StorageError

Echo = Callable[[str], None]
FLOW_PREFIX = "memory-"
TOP_NAMESPACES = 20


def _when(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "-"
    minutes = int((now - moment).total_seconds() // 60)
    ago = f"{minutes} min ago" if abs(minutes) < 120 else f"{minutes // 60} h ago"
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({ago})"


def _no_runs_why(api: ApiCheck) -> str | None:
    if not api.configured and not api.reachable:
        return "no Prefect server answers; flow commands start one (`archivist prefect start`)"
    if not api.reachable:
        return f"Prefect API at {api.url} unreachable: {api.problem}"
    return None


def prefect_lines(api: ApiCheck, now: datetime) -> list[str]:
    """Where the API is, then the latest started run of every ``memory-*`` flow it knows."""
    why = _no_runs_why(api)
    if why is not None:
        return [api.line(), f"n/a ({why})"]
    import httpx  # as Prefect's client, which reads the runs, loads it anyway

    try:
        return [api.line(), *_prefect_runs(api.url, now)]
    except (httpx.HTTPError, OSError) as exc:
        return [api.line(), f"n/a (Prefect API at {api.url} failed: {type(exc).__name__}: {exc})"]


def _prefect_runs(url: str, now: datetime) -> list[str]:
    lines = [
        f"{flow:<28} {state:<10} {_when(started, now)}"
        for flow, state, started in latest_prefect_runs(url)
    ]
    return lines or ["no runs of memory-* flows yet"]


def latest_prefect_runs(url: str) -> list[tuple[str, str, datetime | None]]:
    """Flow name, state and start of the latest started run of each ``memory-*`` flow, as the
    API at ``url`` knows them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterStartTime,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    started = FlowRunFilter(start_time=FlowRunFilterStartTime(is_null_=False))
    runs: list[tuple[str, str, datetime | None]] = []
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        flows = client.read_flows(flow_filter=FlowFilter(name=FlowFilterName(like_=FLOW_PREFIX)))
        for flow in sorted(flows, key=lambda f: f.name):
            latest = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow.name])),
                flow_run_filter=started,
                sort=FlowRunSort.START_TIME_DESC,
                limit=1,
            )
            if latest:
                state = (latest[0].state.name if latest[0].state else None) or "?"
                runs.append((flow.name, state, latest[0].start_time))
    return runs


def runs_lines(conn: Connection, now: datetime) -> list[str]:
    from storage.status import crashed_runs, last_runs

    rows = last_runs(conn)
    lines = [
        f"{r.flow:<28} {r.status:<10} {_when(r.started_at, now)}, as of {r.as_of:%Y-%m-%d %H:%M}"
        for r in rows
    ] or ["no runs recorded yet"]
    crashed = crashed_runs(conn)
    if crashed is not None:
        lines.append(
            f"crashed runs: {crashed.count}; last: {crashed.flow} started "
            f"{_when(crashed.started_at, now)}: {crashed.reason or 'no reason recorded'}"
        )
    return lines


def queue_lines(conn: Connection, now: datetime) -> list[str]:
    from storage.status import queue_overview, table_exists

    if not table_exists(conn, "memory_write_queue"):
        return ["n/a (no memory_write_queue table: run `archivist db upgrade`)"]
    queue = queue_overview(conn)
    counts = ", ".join(f"{s} {n}" for s, n in sorted(queue.by_status.items())) or "empty"
    oldest = _when(queue.oldest_pending, now) if queue.oldest_pending else "none pending"
    dead = queue.by_status.get("dead", 0)
    return [counts, f"oldest pending: {oldest}", f"dead: {dead}"]


def memory_lines(conn: Connection) -> list[str]:
    from storage.memories import TIERS
    from storage.status import memory_counts

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

    from storage.quality_runs import latest_quality_run
    from storage.status import table_exists

    if not table_exists(conn, "quality_runs"):
        return ["n/a (no quality_runs table: run `archivist db upgrade`)"]
    with Session(bind=conn) as session:
        last = latest_quality_run(session)
    if last is None:
        return ["no quality run yet (run `archivist quality`)"]
    verdict = "passed" if last.success else f"FAILED ({last.critical_failures} critical)"
    lines = [f"{verdict}, {_when(last.run_at, now)}, as of {last.as_of:%Y-%m-%d %H:%M}"]
    for suite, c in last.suite_results.items():
        lines.append(
            f"{suite:<16} {c.get('evaluated', 0)} evaluated, {c.get('failed', 0)} failed,"
            f" {c.get('critical', 0)} critical"
        )
    lines.append(f"Data Docs: {last.data_docs_uri or '-'}")
    return lines


def store_sections(settings: Settings, now: datetime) -> list[tuple[str, list[str]]]:
    """The sections read from the store; one n/a line each when it cannot be reached."""
    from storage.engine import open_store
    from storage.status import table_exists

    titles = ["Runs (runs table)", "Write queue", "Memories per tier", "Last quality report"]
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
            (titles[3], quality_lines(conn, now)),
        ]


def server_data(settings: Settings) -> dict[str, Any]:
    """Which server holds the store and, for the embedded one, how long it stays up."""
    from storage.keeper import keeper_pid

    if settings.database_url is not None:
        return {"embedded": False}
    pgdata, seconds = settings.pgdata_dir, settings.embedded_keep_alive_seconds
    pid = keeper_pid(pgdata) if pgdata.is_dir() else None
    return {"embedded": True, "pgdata": str(pgdata), "keep_alive_s": seconds, "keeper_pid": pid}


def server_line(data: dict[str, Any]) -> str:
    if not data["embedded"]:
        return "PostgreSQL at ARCHIVIST_DATABASE_URL"
    seconds = data["keep_alive_s"]
    kept = f"up {seconds:g} s after its last client (`archivist db stop`: now)"
    return f"embedded PostgreSQL in {data['pgdata']}; {kept if seconds else 'stops with it'}"


def show_status(settings: Settings, echo: Echo, now: datetime | None = None) -> None:
    """Print the status screen."""
    now = now or datetime.now(UTC)
    sections = [("Prefect flow runs", prefect_lines(check_api(configured_api_url()), now))]
    stored = store_sections(settings, now)  # opens the store: its keeper starts first
    sections += [("Store", [server_line(server_data(settings))]), *stored]
    echo(f"Archivist status at {now:%Y-%m-%d %H:%M} UTC")
    for title, lines in sections:
        echo("")
        echo(f"== {title}")
        for line in lines:
            echo(f"  {line}")


def status_document(settings: Settings, now: datetime) -> dict[str, Any]:
    """The status screen as data; a section that cannot be read is ``{"unavailable": why}``."""
    api = check_api(configured_api_url())
    return {
        "at": now,
        "prefect_api": api.as_dict(),
        "prefect": _prefect_data(api),
        **_store_data(settings),
        "server": server_data(settings),
    }


def _prefect_data(api: ApiCheck) -> dict[str, Any]:
    why = _no_runs_why(api)
    if why is not None:
        return {"unavailable": why}
    import httpx  # as Prefect's client, which reads the runs, loads it anyway

    try:
        runs = latest_prefect_runs(api.url)
    except (httpx.HTTPError, OSError) as exc:
        return {"unavailable": f"Prefect API at {api.url} failed: {type(exc).__name__}: {exc}"}
    return {"runs": [{"flow": f, "state": s, "started_at": t} for f, s, t in runs]}


def _store_data(settings: Settings) -> dict[str, Any]:
    from sqlalchemy.orm import Session

    from storage import status
    from storage.engine import open_store
    from storage.quality_runs import latest_quality_run

    names = ("runs", "queue", "memories", "quality")
    try:
        store = open_store(settings)
    except (StorageError, ConfigurationError) as exc:
        return dict.fromkeys(names, {"unavailable": str(exc)})
    with store.engine.connect() as conn:
        tables = ("memories", "memory_write_queue", "quality_runs")
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
            "quality": quality and _quality(quality),
        }


def _totals(counts: dict[str, dict[str, int]]) -> dict[str, int]:
    from storage.memories import TIERS

    return {t: sum(tiers.get(t, 0) for tiers in counts.values()) for t in TIERS}


def _quality(run: Any) -> dict[str, Any]:
    keep = ("success", "critical_failures", "run_at", "as_of", "suite_results", "data_docs_uri")
    return {k: getattr(run, k) for k in keep}


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the sections as one JSON document.")
def status_command(as_json: bool) -> None:
    """One screen: last runs, write queue, memories per tier and namespace, last quality."""
    if not as_json:
        show_status(load_settings(), click.echo)
        return
    from serving import json_row

    document = json_row(status_document(load_settings(), datetime.now(UTC)))
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))
