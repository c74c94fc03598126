"""``archivist mcp`` and ``archivist worker`` as real processes, and the SDK's client on them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from sqlalchemy.orm import Session

from storage.kernel.settings import Settings
from storage.keys import create_key, revoke_key
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync

ARCHIVIST = str(Path(sys.executable).with_name("archivist"))
STARTUP = 60.0  # seconds a server may take to listen (imports, the store's checks)


def server_env(settings: Settings, key: str | None = None) -> dict[str, str]:
    """What the user's shell would export: this test's store, files and embedder, for a stdio
    server the key it serves with (and the code under test: the SDK starts a stdio server
    with a bare environment, which would drop a PYTHONPATH that points at a checkout other
    than the installed one)."""
    assert settings.database_url is not None
    code = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    env = {
        "ARCHIVIST_DATABASE_URL": settings.database_url.get_secret_value(),
        "ARCHIVIST_DATA_DIR": str(settings.data_dir),
        "ARCHIVIST_MEMORY_ROOT": settings.memory_root_url,
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
        "ARCHIVIST_TIMEZONE": "UTC",
        **code,
    }
    return env if key is None else env | {"ARCHIVIST_SERVING__KEY": key}


def stdio(settings: Settings, *args: str, errlog: TextIO, key: str) -> Client:
    """The SDK's client on ``archivist mcp ARGS`` started as a subprocess over stdio, serving
    with ``key``."""
    params = StdioServerParameters(
        command=ARCHIVIST, args=["mcp", *args], env=server_env(settings, key)
    )
    return Client(stdio_client(params, errlog=errlog))


@asynccontextmanager
async def keyed(url: str, key: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK's streamable HTTP client presenting ``key`` as a bearer token."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        client = Client(streamable_http_client(url, http_client=http), mode=mode)
        async with client:
            yield client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(settings: Settings, stderr: Path) -> Iterator[str]:
    """``archivist mcp --http`` on a free loopback port; yields its URL and stops it."""
    port = free_port()
    with stderr.open("w") as log:
        process = subprocess.Popen(
            [ARCHIVIST, "mcp", "--http", "--port", str(port)],
            env={**os.environ, **server_env(settings)},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            _wait_listening(process, port, stderr)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait_listening(process: subprocess.Popen[bytes], port: int, stderr: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"archivist mcp --http exited:\n{stderr.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)  # polling for readiness, under a deadline
    raise AssertionError(f"archivist mcp --http not listening after {STARTUP} s")


@contextmanager
def worker(settings: Settings) -> Iterator[subprocess.Popen[str]]:
    """``archivist worker``, draining; stopped with SIGTERM as a user's Ctrl-C would."""
    process = subprocess.Popen(
        [ARCHIVIST, "worker"],
        env={**os.environ, **server_env(settings)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        first = process.stdout.readline()
        assert "draining" in first, first + process.stdout.read()
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


def new_key(store: Store, namespace: str, *, read_only: bool = False) -> tuple[int, str]:
    with Session(store.engine) as session, session.begin():
        return create_key(session, namespace, read_only=read_only)


def revoke(store: Store, key_id: int) -> None:
    with Session(store.engine) as session, session.begin():
        revoke_key(session, key_id, datetime.now(UTC))


def seed(store: Store, namespace: str, *lines: str) -> None:
    """One conversation an hour ago, through the daily sync's real steps: memories with
    their session and message ids, an episode, a daily log."""
    now = datetime.now(UTC)
    add_session(store, f"{namespace}-chat", namespace, chat(now - timedelta(hours=1), *lines))
    run_sync(store, now)


def data(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured result."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error(result: CallToolResult) -> str:
    """A failed call's message."""
    assert result.is_error, result.structured_content
    return " ".join(getattr(block, "text", "") for block in result.content)


def text_of(result: CallToolResult) -> str:
    """A successful call's text content, what a model reads."""
    assert not result.is_error, result.content
    return "".join(getattr(block, "text", "") for block in result.content)


def cited(result: CallToolResult) -> dict[str, Any]:
    """A search's data, its hits labelled [Memory 1] on, after checking what the model reads:
    one labelled line per hit, a blank line, and the Sources: line."""
    found = data(result)
    hits = found["hits"]
    assert [h["label"] for h in hits] == [f"[Memory {n}]" for n in range(1, len(hits) + 1)]
    lines = [f"{h['label']} {' '.join(h['content'].split())}" for h in hits]
    assert text_of(result).splitlines() == [*lines, "", found["sources"]]
    return found
