"""Which Prefect API a command talks to, and whether it answers, decided without importing
Prefect (importing it takes about 2 s) unless a project settings file may set the URL.

Prefect reads the URL from, first to last: the environment, ``./.env``,
``./prefect.toml``, ``[tool.prefect]`` in ``./pyproject.toml``, the active profile in
``profiles.toml``. The environment and the profile are read here; the project files only
say that Prefect itself must be asked. With no URL set, flow commands use the local server
of ``deployments.local_prefect``, where ``prefect server start`` listens
(``PREFECT_SERVER_API_HOST`` and ``PREFECT_SERVER_API_PORT``, default 127.0.0.1:4200).
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PROBE_TIMEOUT = 0.5  # seconds; a server on this machine answers its health check in ~5 ms


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


def profile_api_url() -> str | None:
    """``PREFECT_API_URL`` of the active Prefect profile (``PREFECT_PROFILE`` or ``active``)."""
    path = _profiles_path()
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active")
    profile = data.get("profiles", {}).get(active, {})
    url = profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None
    return str(url) if url else None


def configured_api_url() -> str | None:
    """Prefect's API URL as Prefect would read it, None when nothing sets it. Prefect is
    asked only when it is loaded already or a project settings file may set the URL."""
    if "prefect" not in sys.modules:
        from_env = os.environ.get("PREFECT_API_URL")
        if from_env or not project_files_may_configure():
            return from_env or profile_api_url()
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


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
    parts = urlsplit(f"{url.rstrip('/')}/health")
    try:
        port = parts.port
    except ValueError as exc:
        return f"InvalidURL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"InvalidURL: {parts.geturl()!r} is not an http:// or https:// URL"
    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    connection = kind(parts.hostname, port, timeout=timeout)
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
