"""Which Prefect API a command talks to, decided without importing Prefect.

Without ``PREFECT_API_URL``, every flow command would start and stop a temporary Prefect
server of its own: 9 to 19 s for under a second of work, and runs the UI never shows. A
server already running on this machine, where ``prefect server start`` puts it
(``PREFECT_SERVER_API_HOST`` and ``PREFECT_SERVER_API_PORT``, default 127.0.0.1:4200), is
used instead, and the command says so. A URL set anywhere Prefect reads settings wins.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx


def prefect_may_be_configured() -> bool:
    """Whether the environment or a Prefect settings file may set the API URL (cheap)."""
    if os.environ.get("PREFECT_API_URL"):
        return True
    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    sources = {
        home / "profiles.toml": "PREFECT_API_URL",
        Path(".env"): "PREFECT_API_URL",
        Path("prefect.toml"): "",
        Path("pyproject.toml"): "tool.prefect",
    }
    return any(
        path.is_file() and marker in path.read_text(errors="replace")
        for path, marker in sources.items()
    )


def local_server_url() -> str:
    """Where ``prefect server start`` listens with this environment's settings."""
    host = os.environ.get("PREFECT_SERVER_API_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    port = os.environ.get("PREFECT_SERVER_API_PORT") or "4200"
    return f"http://{host}:{port}/api"


def use_running_server(timeout: float = 0.5) -> str | None:
    """Point this process at a Prefect server running here, if nothing chose one; its URL."""
    if prefect_may_be_configured():
        return None
    url = local_server_url()
    try:
        answer = httpx.get(f"{url}/health", timeout=timeout)
    except httpx.HTTPError:
        return None
    if answer.status_code != 200 or answer.text.strip() != "true":
        return None
    os.environ["PREFECT_API_URL"] = url
    return url
