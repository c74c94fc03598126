"""The Prefect API a flow command runs against, and the local server it starts when none is
chosen.

Without ``PREFECT_API_URL``, Prefect itself would start a temporary server inside every
flow command and stop it at exit: 9 to 19 s for under a second of work, a start that timed
out after Prefect's 20 s on a busy machine (the demo failed 3 times in 4 that way), runs no
UI shows while they happen, and a server left running when the command is killed with
``kill -9``. Archivist instead keeps one local server, as it keeps the embedded
PostgreSQL: the first flow command starts ``prefect server start`` in the background (its
own session, so Ctrl-C in the terminal leaves it be), waits for it as long as
``ARCHIVIST_PREFECT__STARTUP_SECONDS`` allows (300 s), and every later command finds it
answering at once. It serves the UI too, where the demo's runs are. It keeps running until
``archivist prefect stop``. Its pid is in ``$PREFECT_HOME/archivist-server.json``, its log
in ``$PREFECT_HOME/archivist-server.log``; a lock beside them makes two commands started
together start one server.

A URL set anywhere Prefect reads it (``deployments.prefect_api``) is used as it is; if it
does not answer, the command stops with one line saying so, before any flow starts.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from deployments.prefect_api import (
    configured_api_url,
    health_problem,
    local_server_url,
    project_files_may_configure,
)
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import Settings

Echo = Callable[[str], None]
CONFIGURED_PROBE = 5.0  # seconds: a configured server may be remote or busy
LOCAL_PROBE = 2.0  # seconds: a server on this machine, which may be loaded
POLL = 0.25  # seconds between health checks of a server starting
STOP_WAIT = 30.0  # seconds a stopping server may take before it is killed
SETTING = "ARCHIVIST_PREFECT__STARTUP_SECONDS"


def prefect_home() -> Path:
    """``PREFECT_HOME``, where Prefect keeps its state (and this module its server's pid)."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


@dataclass(frozen=True)
class LocalServer:
    """The local server of a ``PREFECT_HOME``, listening where ``local_server_url`` says."""

    home: Path
    url: str  # its API, http://127.0.0.1:4200/api by default

    @classmethod
    def here(cls) -> LocalServer:
        return cls(prefect_home(), local_server_url())

    @property
    def state_path(self) -> Path:
        return self.home / "archivist-server.json"

    @property
    def log_path(self) -> Path:
        return self.home / "archivist-server.log"

    @property
    def ui_url(self) -> str:
        return self.url.removesuffix("/api")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the start lock: one command starts the server, the others wait for it."""
        self.home.mkdir(parents=True, exist_ok=True)
        with (self.home / "archivist-server.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def running(self) -> psutil.Process | None:
        """The process this module started, if it is still that process."""
        try:
            state = json.loads(self.state_path.read_text())
            process = psutil.Process(int(state["pid"]))
            if abs(process.create_time() - float(state["created"])) < 1.0:
                return process
        except (OSError, ValueError, KeyError, TypeError, psutil.Error):
            pass
        return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def use_prefect(settings: Settings, echo: Echo = _stderr) -> str:
    """Point this process at the Prefect API its flows should use, before Prefect loads;
    its URL. A configured URL must answer; with none, the local server (started if need be).
    """
    configured = _configured_url()
    if configured is not None:
        problem = health_problem(configured, CONFIGURED_PROBE)
        if problem is not None and not problem.startswith("its /health answered"):
            raise ConfigurationError(
                f"the Prefect API at {configured} does not answer ({problem}); start that "
                "server, or unset PREFECT_API_URL to let Archivist start a local one"
            )
        return configured
    if "prefect" in sys.modules:  # it read its settings when it loaded: too late to set one
        raise RuntimeError("use_prefect must run before Prefect is imported")
    server = LocalServer.here()
    with server.locked():
        if _answers(server):
            echo(f"using the Prefect server at {server.url} (PREFECT_API_URL chooses another)")
        else:
            _start(server, settings.prefect.startup_seconds, echo)
    os.environ["PREFECT_API_URL"] = server.url
    return server.url


def _configured_url() -> str | None:
    """``PREFECT_API_URL`` as Prefect reads it. When a settings file of this folder may set
    it, Prefect is asked in a child process: this one must load Prefect only once the URL
    is chosen (Prefect reads its settings once, as it loads)."""
    if "prefect" in sys.modules or not project_files_may_configure():
        return configured_api_url()
    asked = subprocess.run(
        [sys.executable, "-c", _ASK_PREFECT], capture_output=True, text=True, timeout=300
    )
    if asked.returncode != 0:
        said = (asked.stderr.strip().splitlines() or ["no message"])[-1]
        raise ConfigurationError(f"Prefect cannot read its settings in this folder: {said}")
    return asked.stdout.strip() or None


_ASK_PREFECT = "from prefect.settings import PREFECT_API_URL as u; print(u.value() or '')"


def _answers(server: LocalServer) -> bool:
    """Whether a Prefect API answers at the server's address; an error if something else
    does (another program on that port)."""
    problem = health_problem(server.url, LOCAL_PROBE)
    if problem is None:
        return True
    if problem.startswith("its /health answered"):
        port = urlsplit(server.url).port
        raise ConfigurationError(
            f"something that is not a Prefect server answers at {server.url} ({problem}): set "
            f"PREFECT_SERVER_API_PORT to a free port (now {port}), or PREFECT_API_URL to a server"
        )
    return False


def _start(server: LocalServer, seconds: float, echo: Echo) -> None:
    """Start the server in the background and wait until it answers, or stop it and say why."""
    echo(
        f"starting a local Prefect server at {server.ui_url} (once: later commands use it; "
        "`archivist prefect stop` stops it)..."
    )
    process = _spawn(server)
    deadline = time.monotonic() + seconds
    while health_problem(server.url, LOCAL_PROBE) is not None:
        if process.poll() is not None:
            server.state_path.unlink(missing_ok=True)
            raise ConfigurationError(
                f"the local Prefect server exited (code {process.returncode}) before it "
                f"answered: {_last_line(server.log_path)} (log: {server.log_path})"
            )
        if time.monotonic() > deadline:
            _terminate(psutil.Process(process.pid))
            server.state_path.unlink(missing_ok=True)
            raise ConfigurationError(
                f"the local Prefect server did not answer within {seconds:g} s; a busy machine "
                f"may need longer: set {SETTING}=600 (its log: {server.log_path})"
            )
        time.sleep(POLL)  # polling a server that is starting, under a deadline


def _spawn(server: LocalServer) -> subprocess.Popen[bytes]:
    """``prefect server start`` in a session of its own, its pid recorded."""
    where = urlsplit(server.url)
    # Neither the URL it is to serve nor the CLI's own console handler (deployments.cli).
    ours = {"PREFECT_API_URL", "PREFECT_LOGGING_HANDLERS_CONSOLE_CLASS"}
    env = {k: v for k, v in os.environ.items() if k not in ours}
    env |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    command = [sys.executable, "-m", "prefect", "server", "start"]
    command += ["--host", str(where.hostname), "--port", str(where.port)]
    with server.log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=server.home,  # no project's prefect.toml or .env of the caller's folder
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    created = psutil.Process(process.pid).create_time()
    state = {"pid": process.pid, "created": created, "url": server.url}
    server.state_path.write_text(json.dumps(state))
    return process


def stop_server() -> str:
    """Stop the local server this module started; say what happened."""
    if "prefect" in sys.modules:  # it read its settings when it loaded: too late to set one
        raise RuntimeError("use_prefect must run before Prefect is imported")
    server = LocalServer.here()
    with server.locked():
        process = server.running()
        server.state_path.unlink(missing_ok=True)
    if process is None:
        return f"no local Prefect server of Archivist's is running (for {server.home})"
    _terminate(process)
    return f"stopped the local Prefect server at {server.ui_url} (pid {process.pid})"


def _terminate(process: psutil.Process) -> None:
    """SIGTERM to the server's session (uvicorn shuts down), SIGKILL if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(STOP_WAIT)
    except psutil.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_WAIT)
    except (ProcessLookupError, psutil.NoSuchProcess):
        pass  # already gone


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "nothing logged"
