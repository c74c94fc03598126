"""A real HTTP server on 127.0.0.1 that records JSON POSTs (the alert webhook's peer)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.local_http import serving


@dataclass
class Webhook:
    """Its URL, the bodies it received, and the status codes to answer (then 200)."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def payloads(self, check: str | None = None) -> list[dict[str, Any]]:
        return [p for p in self.received if check is None or p.get("check") == check]


@contextmanager
def webhook_server() -> Iterator[Webhook]:
    """Start the server in a thread; stop it on exit."""
    hook = Webhook(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                hook.received.append(json.loads(body))
                status = hook.statuses.pop(0) if hook.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests assert on what arrived."""

    with serving(Handler) as base:
        hook.url = f"{base}/hook"
        yield hook
