"""A real HTTP server on a free loopback port, in a thread: the tests' peers for what is
outside the machine (an LLM or embedding endpoint, an alert webhook, a Prefect API)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# How often the serving thread looks for a shutdown. With ``serve_forever``'s default,
# 0.5 s, each test that stopped a server waited up to half a second with nothing to do:
# 0.4-0.5 s of the wall time of about 30 tests (``bench/suite.py -n 0``).
SHUTDOWN_POLL_SECONDS = 0.02


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 until the block ends; yields ``http://127.0.0.1:PORT``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
