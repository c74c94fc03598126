"""An ASGI middleware that answers 413 to a request body over a size, before parsing it.

A declared ``Content-Length`` over the limit is refused at once. A body without one
(chunked) is read here up to the limit, refused past it, and handed on whole. A route may
take larger bodies (``Wider``): adding a document takes up to ``document_body_bytes``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from storage.kernel.settings import Settings

# JSON text can take up to 3 bytes for each byte of the text it carries (a character of 2
# or 4 UTF-8 bytes escaped as \uXXXX is 6 or 12; a line break, a tab, a quote as 2), and
# base64 4 for 3: a document at its cap always fits, with the body's other fields beside it.
JSON_EXPANSION = 3


def document_body_bytes(settings: Settings) -> int:
    """The largest body that adds a document: its cap as JSON at worst, plus an ordinary
    body's limit for the other fields."""
    return JSON_EXPANSION * settings.documents.max_upload_bytes + settings.serving.max_body_bytes


@dataclass(frozen=True)
class Wider:
    """A larger limit for requests of one method whose path matches ``path``; ``setting``
    names what sets it."""

    method: str
    path: re.Pattern[str]
    max_bytes: int
    setting: str


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, wider: Sequence[Wider] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.wider = tuple(wider)

    def limit(self, scope: Scope) -> tuple[int, str]:
        """The request's limit and the setting that sets it."""
        for route in self.wider:
            if scope.get("method") == route.method and route.path.fullmatch(scope["path"]):
                return route.max_bytes, route.setting
        return self.max_bytes, "ARCHIVIST_SERVING__MAX_BODY_BYTES"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > limit[0]:
                await self._refuse(send, *limit)
                return
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit[0]:
                await self._refuse(send, *limit)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, replay(b"".join(chunks), receive), send)

    async def _refuse(self, send: Send, max_bytes: int, setting: str) -> None:
        body = json.dumps({"error": f"request body over {max_bytes} bytes ({setting})"}).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives a body already read first, then what the client sends next."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
