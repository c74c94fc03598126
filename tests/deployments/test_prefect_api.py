"""Flow commands use the Prefect server already running here, or the one chosen, and say so
in one line when the chosen one does not answer."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterStartTime,
)
from prefect.client.schemas.sorting import FlowRunSort
from prefect.settings import PREFECT_API_URL

from deployments.prefect_api import ApiError, health_problem, latest_runs
from flows.daily_sync import memory_sync_daily
from storage.kernel.settings import Settings
from tests.local_http import serving

ARCHIVIST = str(Path(sys.executable).parent / "archivist")


def _clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return env | {"PREFECT_HOME": str(tmp_path / "prefect-home")} | extra


def test_a_flow_command_runs_on_the_server_already_running(
    flow_env: Settings, tmp_path: Path
) -> None:
    url = str(PREFECT_API_URL.value())  # the session's real Prefect server
    where = urlparse(url)
    env = _clean_env(
        tmp_path,
        PREFECT_SERVER_API_HOST=str(where.hostname),
        PREFECT_SERVER_API_PORT=str(where.port),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )
    with get_client(sync_client=True) as client:
        name = FlowFilter(name=FlowFilterName(any_=["memory-queue-drain"]))
        before = len(client.read_flow_runs(flow_filter=name))

    result = subprocess.run(
        [ARCHIVIST, "queue", "drain"], env=env, capture_output=True, text=True, timeout=300
    )

    assert result.returncode == 0, result.stderr
    assert f"using the Prefect server at {url}" in result.stderr
    with get_client(sync_client=True) as client:
        assert len(client.read_flow_runs(flow_filter=name)) == before + 1
    assert "Starting temporary server" not in result.stderr + result.stdout


def test_a_folder_whose_prefect_toml_sets_no_url_still_gets_the_local_server(
    flow_env: Settings, tmp_path: Path
) -> None:
    """Prefect must be asked what such a file sets, and asking it loads it: this process
    then could no longer point it at the local server."""
    where = urlparse(str(PREFECT_API_URL.value()))  # stands in for the kept local server
    project = tmp_path / "project"
    project.mkdir()
    (project / "prefect.toml").write_text('[logging]\nlevel = "WARNING"\n')
    env = _clean_env(
        tmp_path,
        PREFECT_SERVER_API_HOST=str(where.hostname),
        PREFECT_SERVER_API_PORT=str(where.port),
    )

    drained = subprocess.run(
        [ARCHIVIST, "queue", "drain"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert drained.returncode == 0, drained.stderr[-3000:]
    assert f"using the Prefect server at {where.geturl()}" in drained.stderr
    assert "temporary server" not in drained.stderr


def test_a_command_that_runs_no_flow_never_names_a_prefect_server(
    flow_env: Settings, tmp_path: Path
) -> None:
    where = urlparse(str(PREFECT_API_URL.value()))  # a Prefect server that answers
    env = _clean_env(
        tmp_path,
        PREFECT_SERVER_API_HOST=str(where.hostname),
        PREFECT_SERVER_API_PORT=str(where.port),
    )

    stats = subprocess.run(
        [ARCHIVIST, "queue", "stats"], env=env, capture_output=True, text=True, timeout=300
    )

    assert stats.returncode == 0, stats.stderr
    assert "Prefect" not in stats.stdout + stats.stderr


def test_a_chosen_url_that_does_not_answer_is_one_line_before_any_flow_runs(
    settings: Settings, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/api"
    assert settings.database_url is not None
    env = _clean_env(
        tmp_path,
        PREFECT_API_URL=url,
        ARCHIVIST_DATABASE_URL=settings.database_url.get_secret_value(),
        ARCHIVIST_EMBEDDING__PROVIDER="hashing",
    )

    result = subprocess.run(
        [ARCHIVIST, "sync", "--dry-run"], env=env, capture_output=True, text=True, timeout=300
    )

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: the Prefect API at {url} does not answer (ConnectionRefusedError: [Errno 111] "
        "Connection refused); start that server, or unset PREFECT_API_URL to let Archivist "
        "start a local one"
    ]
    assert result.stdout == ""


class _Answers(BaseHTTPRequestHandler):
    """/health as a Prefect API answers it, and as other servers might."""

    replies = {"/prefect/health": (200, "true"), "/broken/health": (500, "oops")}

    def do_GET(self) -> None:
        status, body = self.replies.get(self.path, (200, "<html>hello</html>"))
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_the_health_probe_tells_a_prefect_api_from_anything_else() -> None:
    with serving(_Answers) as base:
        with socket.socket() as probe:  # a port nothing listens on once closed
            probe.bind(("127.0.0.1", 0))
            closed = f"http://127.0.0.1:{probe.getsockname()[1]}/api"
        assert health_problem(f"{base}/prefect") is None
        assert health_problem(f"{base}/prefect/") is None
        assert health_problem(f"{base}/broken") == "its /health answered HTTP 500"
        assert health_problem(f"{base}/other") == (
            "its /health answered, but not as a Prefect API does"
        )
        assert (health_problem(closed) or "").startswith("ConnectionRefusedError")
        assert health_problem("ftp://127.0.0.1/api") == (
            "InvalidURL: 'ftp://127.0.0.1/api/health' is not an http:// or https:// URL"
        )
        assert (health_problem("http://127.0.0.1:99999/api") or "").startswith("InvalidURL")


def test_latest_runs_are_what_prefect_own_client_reads(flow_env: Settings) -> None:
    url = str(PREFECT_API_URL.value())  # the session's real Prefect server
    for day in (19, 20):  # two runs: the later one is the flow's latest
        memory_sync_daily(as_of=datetime(2026, 11, day, 23, tzinfo=UTC))
    expected = []
    with get_client(sync_client=True) as client:
        for flow in sorted(
            client.read_flows(flow_filter=FlowFilter(name=FlowFilterName(like_="memory-"))),
            key=lambda f: f.name,
        ):
            runs = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow.name])),
                flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(is_null_=False)),
                sort=FlowRunSort.START_TIME_DESC,
                limit=1,
            )
            for run in runs:
                expected.append((flow.name, run.state.name if run.state else "?", run.start_time))

    found = latest_runs(url, "memory-")

    assert "memory-sync-daily" in [name for name, _, _ in found]
    assert found == expected


class _Runs(BaseHTTPRequestHandler):
    """A Prefect API behind authentication (as Prefect Cloud's, or a server with an auth
    string): answers the two filters when the Authorization header is ``expected``."""

    expected = ""
    bodies: list[dict[str, Any]] = []
    flows: Any = [{"name": "memory-sync-daily"}]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        if (self.headers.get("Authorization") or "") != self.expected:
            reply: Any = {"detail": "Unauthorized"}
            self.send_response(401)
        elif self.path == "/api/flows/filter":
            reply = self.flows
            self.send_response(200)
        else:
            reply = [{"state": {"name": "Completed"}, "start_time": "2026-11-20T23:00:01.5Z"}]
            self.send_response(200)
        data = json.dumps(reply).encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def runs_api() -> Iterator[str]:
    _Runs.bodies = []
    with serving(_Runs) as base:
        yield f"{base}/api"


_READ_RUNS = """
import json, sys
from deployments.prefect_api import ApiError, latest_runs
try:
    print(json.dumps([[n, s, t.isoformat()] for n, s, t in latest_runs(sys.argv[1], "memory-")]))
except ApiError as exc:
    print(f"ApiError: {exc}")
print("prefect" in sys.modules)
"""


def read_runs(url: str, home: Path, **settings: str) -> list[str]:
    """What a process that never loaded Prefect reads at ``url``, with only ``settings``'s
    PREFECT_* variables, in a folder with no project settings file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"PREFECT_HOME": str(home)} | settings
    done = subprocess.run(
        [sys.executable, "-c", _READ_RUNS, url],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_latest_runs_send_the_credentials_prefect_client_sends(
    runs_api: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    latest = '[["memory-sync-daily", "Completed", "2026-11-20T23:00:01.500000+00:00"]]'
    monkeypatch.setattr(_Runs, "expected", "Bearer pnu_secret")
    assert read_runs(runs_api, tmp_path, PREFECT_API_KEY="pnu_secret") == [latest, "False"]
    assert _Runs.bodies[1] == {
        "flows": {"name": {"any_": ["memory-sync-daily"]}},
        "flow_runs": {"start_time": {"is_null_": False}},
        "sort": "START_TIME_DESC",
        "limit": 1,
    }

    # An auth string (a self-hosted server's) wins over a key, as in Prefect's client; here
    # both from the active profile.
    (tmp_path / "profiles.toml").write_text(
        'active = "work"\n[profiles.work]\nPREFECT_API_AUTH_STRING = "admin:pass"\n'
        'PREFECT_API_KEY = "pnu_other"\n'
    )
    monkeypatch.setattr(_Runs, "expected", "Basic " + base64.b64encode(b"admin:pass").decode())
    assert read_runs(runs_api, tmp_path) == [latest, "False"]

    monkeypatch.setattr(_Runs, "expected", "Basic something-else")
    assert read_runs(runs_api, tmp_path)[0].startswith(
        "ApiError: POST /api/flows/filter answered HTTP 401"
    )


def test_an_answer_of_another_shape_is_an_api_error(
    runs_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Runs, "flows", {"flows": "not a list"})
    with pytest.raises(ApiError, match="answered with a dict"):
        latest_runs(runs_api, "memory-")
    monkeypatch.setattr(_Runs, "flows", [{"id": "no name"}])
    with pytest.raises(ApiError, match="unexpected answer .*KeyError"):
        latest_runs(runs_api, "memory-")
