"""``archivist status`` (one screen: runs, queue, memories, quality) and ``archivist quality``.

Every section degrades to ``n/a (why)`` when its table, the store or the Prefect API is
missing. The first line says which Prefect API flow commands would use and whether it
answers a health check (0.5 s): the configured one, or else the local server that flow
commands start and keep (``deployments.local_prefect``). Its runs are listed when it
answered, read from its REST API with the standard library (``prefect_api.latest_runs``);
status never starts a server just to ask. Prefect itself is imported only to read the URL
when a project settings file may set it, so ``status`` starts fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from http.client import HTTPException
from typing import Any

import click

from deployments.commands._status_store import store_data, store_sections, when
from deployments.prefect_api import (
    ApiCheck,
    ApiError,
    Run,
    check_api,
    configured_api_url,
    latest_runs,
)
from deployments.settings_loader import load_settings
from storage.kernel.settings import Settings

Echo = Callable[[str], None]
FLOW_PREFIX = "memory-"


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
    try:
        return [api.line(), *_prefect_runs(api.url, now)]
    except (OSError, HTTPException, ApiError) as exc:
        return [api.line(), f"n/a (Prefect API at {api.url} failed: {type(exc).__name__}: {exc})"]


def _prefect_runs(url: str, now: datetime) -> list[str]:
    lines = [
        f"{flow:<28} {state:<10} {when(started, now)}"
        for flow, state, started in latest_prefect_runs(url)
    ]
    return lines or ["no runs of memory-* flows yet"]


def latest_prefect_runs(url: str) -> list[Run]:
    """Flow name, state and start of the latest started run of each ``memory-*`` flow, as the
    API at ``url`` knows them."""
    return latest_runs(url, FLOW_PREFIX)


def server_data(settings: Settings) -> dict[str, Any]:
    """Which server holds the store and, for the embedded one, how long it stays up."""
    from storage.server.engine import configured_url
    from storage.server.keeper import keeper_pid

    if configured_url(settings) is not None:
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
        **store_data(settings),
        "server": server_data(settings),
    }


def _prefect_data(api: ApiCheck) -> dict[str, Any]:
    why = _no_runs_why(api)
    if why is not None:
        return {"unavailable": why}
    try:
        runs = latest_prefect_runs(api.url)
    except (OSError, HTTPException, ApiError) as exc:
        return {"unavailable": f"Prefect API at {api.url} failed: {type(exc).__name__}: {exc}"}
    return {"runs": [{"flow": f, "state": s, "started_at": t} for f, s, t in runs]}


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the sections as one JSON document.")
def status_command(*, as_json: bool) -> None:
    """One screen: last runs, write queue, memories per tier and namespace, last quality."""
    if not as_json:
        show_status(load_settings(), click.echo)
        return
    from serving import json_row

    document = json_row(status_document(load_settings(), datetime.now(UTC)))
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))
