"""Which Prefect API a command talks to, whether it answers, and its latest runs, found
without importing Prefect (importing it takes about 2 s) unless a project settings file may
set the URL.

Prefect reads the URL from, first to last: the environment, ``./.env``,
``./prefect.toml``, ``[tool.prefect]`` in ``./pyproject.toml``, the active profile in
``profiles.toml``. The environment and the profile are read here; the project files only
say that Prefect itself must be asked. With no URL set, flow commands use the local server
of ``deployments.local_prefect``, where ``prefect server start`` listens
(``PREFECT_SERVER_API_HOST`` and ``PREFECT_SERVER_API_PORT``, default 127.0.0.1:4200).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tomllib
from dataclasses import dataclass
from datetime import datetime
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PROBE_TIMEOUT = 0.5  # seconds; a server on this machine answers its health check in ~5 ms
RUNS_TIMEOUT = 10.0  # seconds for each request for runs, of a server that did answer that


def _profiles_path() -> Path:
    if os.environ.get("PREFECT_PROFILES_PATH"):
        return Path(os.environ["PREFECT_PROFILES_PATH"]).expanduser()
    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    return home / "profiles.toml"


def project_files_may_configure() -> bool:
    """Whether a settings file of the current folder may set Prefect's API URL (cheap)."""
    sources = {
        Path(".env"): "PREFECT_API_URL",
        Path("prefect.toml"): "",
        Path("pyproject.toml"): "tool.prefect",
    }
    return any(
        path.is_file() and marker in path.read_text(errors="replace")
        for path, marker in sources.items()
    )


def profile_setting(name: str) -> str | None:
    """Setting ``name`` (``PREFECT_API_URL``, ...) of the active Prefect profile
    (``PREFECT_PROFILE`` or ``active``)."""
    path = _profiles_path()
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active")
    profile = data.get("profiles", {}).get(active, {})
    value = profile.get(name) if isinstance(profile, dict) else None
    return str(value) if value else None


def prefect_setting(name: str) -> str | None:
    """A Prefect setting (``PREFECT_API_URL``, ``PREFECT_API_KEY``, ...) as Prefect would
    read it, None when nothing sets it. Prefect is asked only when it is loaded already or
    a project settings file may set it."""
    if "prefect" not in sys.modules:
        from_env = os.environ.get(name)
        if from_env or not project_files_may_configure():
            return from_env or profile_setting(name)
    import prefect.settings

    value = getattr(prefect.settings, name).value()
    return str(value) if value else None


def configured_api_url() -> str | None:
    """Prefect's API URL as Prefect would read it, None when nothing sets it."""
    return prefect_setting("PREFECT_API_URL")


def local_server_url() -> str:
    """Where ``prefect server start`` listens with this environment's settings."""
    host = os.environ.get("PREFECT_SERVER_API_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    port = os.environ.get("PREFECT_SERVER_API_PORT") or "4200"
    return f"http://{host}:{port}/api"


def health_problem(url: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Why the Prefect API at ``url`` fails its health check; None when it passes.

    Plain ``http.client``: httpx costs ``archivist status`` 0.1 s of imports (its package
    loads its command-line client, rich and pygments with it) and 0.1 s for a certificate
    store that a loopback probe does not use. No proxy is asked, as for a local server.
    """
    health = f"{url.rstrip('/')}/health"
    parts = urlsplit(health)
    try:
        connection = _connection(health, timeout)
    except ValueError as exc:
        return f"InvalidURL: {exc}"
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        answer = connection.getresponse()
        body = answer.read(1024).decode("utf-8", "replace")
    except TimeoutError:
        return f"TimeoutError: no answer within {timeout:g} s"
    except (OSError, HTTPException) as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    finally:
        connection.close()
    if answer.status != 200:
        return f"its /health answered HTTP {answer.status}"
    if body.strip() != "true":
        return "its /health answered, but not as a Prefect API does"
    return None


def _connection(url: str, timeout: float) -> HTTPConnection:
    """A connection to ``url``'s host; ValueError for a URL that is not http(s)://host."""
    parts = urlsplit(url)
    port = parts.port  # ValueError when it is not a port
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    return kind(parts.hostname, port, timeout=timeout)


class ApiError(Exception):
    """The Prefect API answered, but not with what was asked (a status, a body)."""


Run = tuple[str, str, datetime | None]  # flow name, state name, start


def latest_runs(url: str, name_like: str, timeout: float = RUNS_TIMEOUT) -> list[Run]:
    """The latest started run of each flow whose name contains ``name_like``, by flow name,
    as the Prefect API at ``url`` knows them: its REST API's ``/flows/filter`` and
    ``/flow_runs/filter``, the requests Prefect's own client makes for ``read_flows`` and
    ``read_flow_runs``, over one kept-alive ``http.client`` connection. Sends the API key
    or auth string Prefect's client would send (``PREFECT_API_KEY``,
    ``PREFECT_API_AUTH_STRING``). Raises OSError, HTTPException or ApiError."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    headers |= _authorization()
    base = urlsplit(url).path.rstrip("/")
    connection = _connection(url, timeout)

    def post(path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        connection.request("POST", f"{base}{path}", json.dumps(body), headers)
        answer = connection.getresponse()
        data = answer.read()
        if answer.status != 200:
            raise ApiError(f"POST {base}{path} answered HTTP {answer.status}")
        found = json.loads(data)
        if not isinstance(found, list):
            raise ApiError(f"POST {base}{path} answered with a {type(found).__name__}")
        return found

    runs: list[Run] = []
    try:
        flows = post("/flows/filter", {"flows": {"name": {"like_": name_like}}})
        for name in sorted(str(flow["name"]) for flow in flows):
            latest = post(
                "/flow_runs/filter",
                {
                    "flows": {"name": {"any_": [name]}},
                    "flow_runs": {"start_time": {"is_null_": False}},
                    "sort": "START_TIME_DESC",
                    "limit": 1,
                },
            )
            if latest:
                state = (latest[0].get("state") or {}).get("name") or "?"
                started = latest[0].get("start_time")
                runs.append((name, state, datetime.fromisoformat(started) if started else None))
    except (KeyError, TypeError, ValueError) as exc:  # a body of another shape
        raise ApiError(f"unexpected answer from {url}: {type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()
    return runs


def _authorization() -> dict[str, str]:
    """The Authorization header Prefect's client sends: Basic for an auth string (a
    self-hosted server's), else Bearer for an API key (Prefect Cloud's), else none."""
    auth_string = prefect_setting("PREFECT_API_AUTH_STRING")
    if auth_string:
        return {"Authorization": f"Basic {base64.b64encode(auth_string.encode()).decode()}"}
    api_key = prefect_setting("PREFECT_API_KEY")
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


@dataclass(frozen=True)
class ApiCheck:
    """The Prefect API a command would use, and whether it answered just now."""

    url: str  # the configured URL, or where `prefect server start` listens
    configured: bool  # PREFECT_API_URL is set (environment or a Prefect settings file)
    problem: str | None  # why it did not answer; None: it did

    @property
    def reachable(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        """One line for a person: where, whether it answered, and what flow commands do."""
        if self.configured and self.reachable:
            return f"Prefect API: {self.url} (reachable)"
        if self.configured:
            return f"Prefect API: {self.url} (unreachable: {self.problem}; flow commands fail)"
        if self.reachable:
            return f"Prefect API: {self.url} (reachable, not configured: flow commands use it)"
        return (
            f"Prefect API: none (nothing answers at {self.url}); "
            "flow commands start a local server there, see README"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "configured": self.configured,
            "reachable": self.reachable,
            "problem": self.problem,
        }


def check_api(configured_url: str | None, timeout: float = PROBE_TIMEOUT) -> ApiCheck:
    """Probe the configured API, or where a local server would listen when none is."""
    url = configured_url or local_server_url()
    return ApiCheck(url, configured_url is not None, health_problem(url, timeout))
