"""``SearchRoute``: a well-formed search is answered in front of FastAPI, as the endpoint
answers it; every other request reaches the FastAPI app with its body intact. Driven as
ASGI, the way uvicorn calls it (the served API's tests go through it too)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.orm import Session
from starlette.types import Message, Receive, Scope, Send

from serving import MemoryService, SearchRoute
from serving.api import create_app
from storage.kernel.settings import Settings
from storage.keys import create_key, revoke_key
from storage.server.engine import Store
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
PATH = "/v1/namespaces/alice/search"
BODY = json.dumps({"query": "dentist", "limit": 5}).encode()


@dataclass
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Inner:
    """A stand-in for the FastAPI app: what reached it, and the body it read."""

    bodies: list[bytes] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


def call(
    app: Any,
    *,
    body: bytes = BODY,
    key: str | None = None,
    path: str = PATH,
    method: str = "POST",
    headers: list[tuple[bytes, bytes]] | None = None,
    chunks: int = 1,
) -> Answer:
    """One request through an ASGI app; ``chunks`` > 1 sends the body in that many parts."""
    if headers is None:
        headers = [(b"content-type", b"application/json")]
        if chunks == 1:
            headers.append((b"content-length", str(len(body)).encode()))
    if key is not None:
        headers = [*headers, (b"authorization", f"Bearer {key}".encode())]
    scope = {
        "type": "http",
        "http_version": "1.1",
        "scheme": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    size = -(-len(body) // chunks) or 1
    parts = [body[i : i + size] for i in range(0, max(len(body), 1), size)]
    incoming: list[Message] = [
        {"type": "http.request", "body": p, "more_body": i < len(parts) - 1}
        for i, p in enumerate(parts)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, *rest = sent
    return Answer(
        start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in rest)
    )


@pytest.fixture
def service(settings: Settings, store: Store) -> MemoryService:
    serving = settings.serving.model_copy(update={"row_level_security": False})
    return MemoryService.open(settings.model_copy(update={"serving": serving}))


def key_for(store: Store, namespace: str) -> str:
    with Session(store.engine) as session, session.begin():
        return create_key(session, namespace)[1]


def test_a_well_formed_search_is_answered_here_as_the_endpoint_answers_it(
    service: MemoryService, store: Store
) -> None:
    mine = put(store, "alice", ["the dentist is on Friday", "the dentist moved"], AT)
    put(store, "alice2", ["the dentist of alice2"], AT)
    key = key_for(store, "alice")
    inner = Inner()
    route = SearchRoute(inner, service)

    here = call(route, key=key)
    there = call(create_app(service), key=key)

    assert inner.bodies == []
    assert here.status == there.status == 200
    assert here.headers[b"content-type"] == b"application/json"
    assert int(here.headers[b"content-length"]) == len(here.body)
    shown = [service.ids.show("memory", real) for real in mine]
    assert sorted(h["memory_id"] for h in here.json()["hits"]) == sorted(shown)
    # The same answer but for the scores, which the first search's accesses moved.
    for answer in (here, there):
        for hit in answer.json()["hits"]:
            hit.pop("score")
    assert here.json() == there.json()


def test_the_services_refusals_answer_as_the_apps_handlers_do(
    service: MemoryService, store: Store
) -> None:
    put(store, "alice", ["the dentist is on Friday"], AT)
    inner = Inner()
    route = SearchRoute(inner, service)
    other = key_for(store, "alice2")
    with Session(store.engine) as session, session.begin():
        revoked_id, revoked = create_key(session, "alice")
        revoke_key(session, revoked_id, AT)
    cases: dict[str, dict[str, Any]] = {
        "unknown key": {"key": "ak_" + "0" * 40},
        "revoked key": {"key": revoked},
        "another namespace": {"key": other},
        "limit over the maximum": {
            "key": key_for(store, "alice"),
            "body": b'{"query": "a", "limit": 100000}',
        },
    }
    app = create_app(service)
    for name, request in cases.items():
        here, there = call(route, **request), call(app, **request)
        assert (here.status, here.json()) == (there.status, there.json()), name
        assert here.status in (401, 403, 422), name
        assert here.json()["error"], name
        if here.status == 401:
            assert here.headers[b"www-authenticate"] == b"Bearer"
    assert inner.bodies == []


def test_every_other_request_reaches_the_app_with_its_body(
    service: MemoryService, store: Store
) -> None:
    key = key_for(store, "alice")
    inner = Inner()
    route = SearchRoute(inner, service)
    json_only = [(b"content-type", b"application/json")]
    requests: dict[str, dict[str, Any]] = {
        "no key": {},
        "not JSON": {"key": key, "body": b"{query: dentist"},
        "unknown field": {"key": key, "body": b'{"query": "a", "colour": "red"}'},
        "wrong type": {"key": key, "body": b'{"query": "a", "limit": "many"}'},
        "a JSON list": {"key": key, "body": b'["dentist"]'},
        "another content type": {
            "key": key,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(BODY))],
        },
        "no length (chunked)": {"key": key, "headers": json_only, "chunks": 3},
        "over the size limit": {
            "key": key,
            "headers": [*json_only, (b"content-length", b"%d" % (10**9))],
        },
        "a bad namespace": {"key": key, "path": "/v1/namespaces/Alice Smith!/search"},
        "another route": {"key": key, "path": "/v1/namespaces/alice/prime"},
        "another method": {"key": key, "method": "PUT"},
    }
    for name, request in requests.items():
        answer = call(route, **request)
        assert (answer.status, answer.body) == (299, b"inner"), name
        assert inner.bodies[-1] == request.get("body", BODY), name
    assert len(inner.bodies) == len(requests)
