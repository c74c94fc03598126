"""The OpenAI-compatible embedder against scripted endpoints (MockTransport) and one real server."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import SecretStr

from storage.embedding import OpenAIEmbedder, make_embedder
from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.http_json import Connection
from storage.kernel.settings import EmbeddingSettings
from tests.local_http import serving

DIM = 8
BASE = "http://embed.test/v1"
KEY = "sk-test-secret-123"

Handler = Callable[[httpx.Request], httpx.Response]


def vector_for(text: str, dim: int = DIM) -> list[float]:
    """A deterministic, deliberately unnormalised vector per text."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return [float(x) for x in rng.uniform(0.5, 3.0, dim)]


def reply(texts: list[str], dim: int = DIM, *, shuffle: bool = False) -> dict[str, object]:
    data = [
        {"object": "embedding", "index": i, "embedding": vector_for(t, dim)}
        for i, t in enumerate(texts)
    ]
    if shuffle:
        data.reverse()
    return {"object": "list", "data": data, "model": "m"}


def ok(request: httpx.Request, *, shuffle: bool = False) -> httpx.Response:
    return httpx.Response(200, json=reply(json.loads(request.content)["input"], shuffle=shuffle))


def embedder(handler: Handler, delays: list[float] | None = None, **kwargs: Any) -> OpenAIEmbedder:
    """The embedder over a mock transport; ``kwargs``: its own, and its Connection's."""
    client = httpx.Client(transport=httpx.MockTransport(handler))
    sleep = delays.append if delays is not None else (lambda _: None)
    wire = {k: kwargs.pop(k) for k in ("api_key", "max_retries", "backoff_seconds") if k in kwargs}
    connection = Connection(client=client, sleep=sleep, **wire)
    return OpenAIEmbedder(BASE, "m", DIM, connection=connection, **kwargs)


def expected(texts: list[str]) -> np.ndarray:
    rows = np.array([vector_for(t) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_batches_keep_input_order_even_when_the_server_shuffles() -> None:
    bodies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return ok(request, shuffle=True)

    texts = [f"text {i}" for i in range(150)]
    out = embedder(handler, batch_size=64).embed(texts)

    assert [len(b["input"]) for b in bodies] == [64, 64, 22]  # type: ignore[arg-type]
    assert all(b["model"] == "m" for b in bodies)
    assert out.dtype == np.float32 and out.shape == (150, DIM)
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)


def test_no_texts_no_request() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    assert embedder(handler).embed([]).shape == (0, DIM)


def test_bearer_header_only_with_a_key() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return ok(request)

    embedder(handler, api_key=KEY).embed(["a"])
    embedder(handler).embed(["a"])
    assert seen == [f"Bearer {KEY}", None]


def test_5xx_is_retried_with_the_backoff_sequence() -> None:
    statuses = iter([500, 502, 503, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(statuses)
        return ok(request) if status == 200 else httpx.Response(status, text="busy")

    delays: list[float] = []
    out = embedder(handler, delays, max_retries=3).embed(["a", "b"])

    assert delays == [0.5, 1, 2]
    np.testing.assert_allclose(out, expected(["a", "b"]), rtol=1e-6)


def test_429_honours_retry_after_capped_at_30s() -> None:
    answers = iter(["3", "120", "soon", None])

    def handler(request: httpx.Request) -> httpx.Response:
        try:
            retry_after = next(answers)
        except StopIteration:
            return ok(request)
        headers = {"Retry-After": retry_after} if retry_after else {}
        return httpx.Response(429, headers=headers)

    delays: list[float] = []
    embedder(handler, delays, max_retries=4).embed(["a"])

    # seconds are honoured and capped; unparsable or absent falls back to attempt's backoff
    assert delays == [3.0, 30.0, 2, 4]


def test_401_is_a_configuration_error_without_retry_and_without_the_key() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(401, json={"error": f"Incorrect API key provided: {KEY}"})

    delays: list[float] = []
    with pytest.raises(ConfigurationError, match="ARCHIVIST_EMBEDDING__API_KEY") as info:
        embedder(handler, delays, api_key=KEY).embed(["a"])

    assert len(calls) == 1 and delays == []
    assert "HTTP 401" in str(info.value) and KEY not in str(info.value)


def test_404_points_at_base_url_and_model() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="not found")

    with pytest.raises(ConfigurationError, match="ARCHIVIST_EMBEDDING__BASE_URL"):
        embedder(handler).embed(["a"])


def test_timeouts_exhaust_retries_into_a_storage_error() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    delays: list[float] = []
    with pytest.raises(StorageError, match="after 3 attempts") as info:
        embedder(handler, delays, max_retries=2, api_key=KEY).embed(["a"])

    assert len(calls) == 3 and delays == [0.5, 1]
    assert "ReadTimeout" in str(info.value) and f"{BASE}/embeddings" in str(info.value)
    assert KEY not in str(info.value)


def test_connection_errors_are_retried() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectError("refused", request=request)
        return ok(request)

    assert embedder(handler).embed(["a"]).shape == (1, DIM)
    assert len(calls) == 2


@pytest.mark.parametrize(
    "body",
    [
        "<html>not json</html>",
        json.dumps({"error": "no data"}),
        json.dumps({"data": [{"index": 0}]}),
        json.dumps({"data": [{"index": 0, "embedding": ["x"] * DIM}]}),
        json.dumps({"data": []}),  # one text sent, none returned
    ],
)
def test_malformed_replies_are_storage_errors(body: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=body)

    with pytest.raises(StorageError, match="embed.test"):
        embedder(handler).embed(["a"])


def test_wrong_dimension_is_a_configuration_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=reply(["a"], dim=1024))

    with pytest.raises(ConfigurationError) as info:
        embedder(handler).embed(["a"])
    message = str(info.value)
    assert "'m' returned 1024-dimensional vectors but the store holds 8" in message
    assert "ARCHIVIST_EMBEDDING__DIM" in message


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        found = self.path == "/v1/embeddings"
        payload = json.dumps(reply(body["input"], shuffle=True) if found else {}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    with serving(_EmbeddingsHandler) as base:
        yield f"{base}/v1/"


def test_real_http_server(local_server: str) -> None:
    with httpx.Client() as client:
        out = OpenAIEmbedder(
            local_server, "m", DIM, connection=Connection(client=client), batch_size=2
        ).embed(["x", "y", "z"])
    np.testing.assert_allclose(out, expected(["x", "y", "z"]), rtol=1e-6)


def test_make_embedder_builds_the_openai_embedder_from_settings() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return ok(request)

    settings = EmbeddingSettings(
        provider="openai", base_url=BASE, model="m", dim=DIM, api_key=SecretStr(KEY)
    )
    built = make_embedder(settings, client=httpx.Client(transport=httpx.MockTransport(handler)))

    assert built.name == "openai:m" and built.dim == DIM
    np.testing.assert_allclose(built.embed(["a"]), expected(["a"]), rtol=1e-6)
    assert seen == [f"Bearer {KEY}"]
