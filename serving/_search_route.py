"""The API's most frequent request, a well-formed search, answered in plain ASGI.

FastAPI's way to the search endpoint (its middleware, routing, dependency solving, body
validation and response classes) cost the server about 15% of its CPU per search under
load (``bench/api.py``, one worker: 4.5 ms of server CPU per search, 3.8 ms this way).
``SearchRoute`` sits in front of the FastAPI app and answers a search itself when the
request is one the endpoint would accept as it is:

- ``POST /v1/namespaces/{namespace}/search`` with a valid namespace;
- a ``Content-Length`` within ``ARCHIVIST_SERVING__MAX_BODY_BYTES`` and a JSON content type;
- an ``Authorization: Bearer <key>`` header;
- a body that ``SearchRequest`` accepts, validated as FastAPI does (parsed JSON, then the
  model in Python mode).

Anything else goes to the FastAPI app, with the body it has read replayed: bad input,
missing keys, chunked or oversized bodies and every other route get FastAPI's answers and
messages, and ``/docs`` documents the route. The search then runs as the endpoint's does
(``MemoryService.search`` in a worker thread, key checked in its transaction), and an error
it raises answers with the same status and JSON as the app's handlers (``error_reply``).
"""

from __future__ import annotations

import re
from typing import Any

import anyio.to_thread
import orjson
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from serving._api_models import SearchRequest
from serving._body_limit import replay
from serving._errors import error_reply
from serving._service import KeyFor, MemoryService
from serving._views import context_view, search_view
from storage.kernel.records import NAMESPACE

SEARCH_PATH = re.compile(r"/v1/namespaces/([^/]{1,100})/search")


class SearchRoute:
    """ASGI: well-formed searches answered here, every other request by ``app``."""

    def __init__(self, app: ASGIApp, service: MemoryService) -> None:
        self.app = app
        self.service = service
        self.max_bytes = service.settings.serving.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        namespace = _search_namespace(scope)
        key = _bearer(scope) if namespace is not None else None
        if namespace is None or key is None or not self._sized_json(scope):
            await self.app(scope, receive, send)
            return
        body = await _body(receive)
        if body is None:
            return  # the client went away
        request = _parsed(body)
        if request is None:
            await self.app(scope, replay(body, receive), send)
            return
        status, content = await anyio.to_thread.run_sync(self._search, key, namespace, request)
        headers = [(b"content-type", b"application/json")]
        headers.append((b"content-length", str(len(content)).encode()))
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def _search(self, key: str, namespace: str, request: SearchRequest) -> tuple[int, bytes]:
        """The endpoint's search (in a worker thread): its status and JSON."""
        try:
            answer = search_answer(self.service, KeyFor(key, namespace), request)
        except Exception as exc:  # every error answers as the app's handlers answer it
            status, message = error_reply(exc)
            return status, orjson.dumps({"error": message})
        return 200, orjson.dumps(answer)

    def _sized_json(self, scope: Scope) -> bool:
        declared = _header(scope, b"content-length")
        if declared is None or not declared.isdigit() or int(declared) > self.max_bytes:
            return False
        media = (_header(scope, b"content-type") or b"").partition(b";")[0].strip().lower()
        return media == b"application/json"


def search_answer(service: MemoryService, key: KeyFor, request: SearchRequest) -> dict[str, Any]:
    """The search endpoint's answer: labelled hits (each with its passage and its whole
    memory) and the ``Sources:`` line; with a budget, those that fit and the tokens used."""
    if request.budget_tokens is not None:
        context = service.search_within(key, request, request.budget_tokens)
        return context_view(key.namespace, context)
    cited = service.search(
        key,
        request.query,
        limit=request.limit,
        time_range=request.resolved_time_range(),
        kinds=request.kinds,
        include_archived=request.include_archived,
    )
    return search_view(key.namespace, cited)


def _search_namespace(scope: Scope) -> str | None:
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    found = SEARCH_PATH.fullmatch(scope["path"])
    return found[1] if found is not None and NAMESPACE.fullmatch(found[1]) else None


def _header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a header, as Starlette's ``Headers.get`` reads it."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _bearer(scope: Scope) -> str | None:
    """The key of ``Authorization: Bearer <key>``, read as FastAPI's ``HTTPBearer`` does."""
    scheme, _, key = (_header(scope, b"authorization") or b"").decode("latin-1").partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


async def _body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parsed(body: bytes) -> SearchRequest | None:
    try:
        return SearchRequest.model_validate(orjson.loads(body))
    except (orjson.JSONDecodeError, ValidationError):
        return None
