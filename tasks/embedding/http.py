"""Embedder for OpenAI-compatible ``/embeddings`` endpoints (OpenAI, Jina, Ollama, TEI, vLLM).

Timeouts, connection errors, 429 and 5xx are retried with backoff (a Retry-After in
seconds wins, capped); other 4xx are not. Settings problems (bad key, wrong URL or model,
wrong dimension) raise ``ConfigurationError``; an endpoint that stays unavailable or
answers nonsense raises ``StorageError``. No message ever contains the API key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from storage.errors import ConfigurationError, StorageError

_MAX_RETRY_AFTER = 30.0
_RETRYABLE = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class OpenAIEmbedder:
    """POSTs ``{"model", "input"}`` batches and returns L2-normalised float32 rows."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        *,
        client: httpx.Client | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_seconds: Sequence[float] = (0.5, 1, 2, 4, 8),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1 or max_retries < 0 or not backoff_seconds:
            raise ConfigurationError(
                "OpenAIEmbedder needs batch_size >= 1, max_retries >= 0 and a backoff sequence"
            )
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dim = dim
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._api_key = api_key
        self._batch_size = batch_size
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = tuple(backoff_seconds)
        self._sleep = sleep

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        return self._dim

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        if self._owns_client:
            self._client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in batches of ``batch_size``; rows follow the input order."""
        parts = [
            self._embed_batch(texts[start : start + self._batch_size])
            for start in range(0, len(texts), self._batch_size)
        ]
        if not parts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.concatenate(parts)

    def _embed_batch(self, batch: Sequence[str]) -> np.ndarray:
        response = self._post({"model": self._model, "input": list(batch)})
        return _normalise(self._vectors(response, len(batch)), self._url)

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        attempts, failure = self._max_retries + 1, ""
        for attempt in range(1, attempts + 1):
            outcome = self._attempt(body)
            if isinstance(outcome, httpx.Response):
                return outcome
            failure, retry_after = outcome
            if attempt < attempts:
                self._sleep(self._delay(attempt, retry_after))
        raise StorageError(
            f"embedding endpoint {self._url} failed ({failure}) after {attempts} attempts; "
            "check the server is up and not overloaded, or raise "
            "ARCHIVIST_EMBEDDING__TIMEOUT_SECONDS / ARCHIVIST_EMBEDDING__MAX_RETRIES"
        )

    def _attempt(self, body: dict[str, Any]) -> httpx.Response | tuple[str, str | None]:
        """One POST: the accepted response, or (what failed, Retry-After) when worth a retry."""
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = self._client.post(
                self._url, json=body, headers=headers, timeout=self._timeout
            )
        except httpx.UnsupportedProtocol as exc:
            raise ConfigurationError(
                f"embedding endpoint {self._url} is not an http(s) URL; "
                "check ARCHIVIST_EMBEDDING__BASE_URL"
            ) from exc
        except _RETRYABLE as exc:
            return type(exc).__name__, None
        if _retryable_status(response.status_code):
            return f"HTTP {response.status_code}", response.headers.get("Retry-After")
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            raise ConfigurationError(self._rejection(response)) from exc
        return response

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        server_says = _retry_after_seconds(retry_after)
        if server_says is not None:
            return server_says
        return float(self._backoff[min(attempt - 1, len(self._backoff) - 1)])

    def _rejection(self, response: httpx.Response) -> str:
        status = response.status_code
        if status in (401, 403):
            hint = "check ARCHIVIST_EMBEDDING__API_KEY"
        elif status == 404:
            hint = "check ARCHIVIST_EMBEDDING__BASE_URL and ARCHIVIST_EMBEDDING__MODEL"
        else:
            hint = (
                f"check model {self._model!r} exists there and accepts batches of "
                f"{self._batch_size} (ARCHIVIST_EMBEDDING__BATCH_SIZE)"
            )
        excerpt = self._excerpt(response)
        return (
            f"embedding endpoint {self._url} refused the request (HTTP {status}: {excerpt}); {hint}"
        )

    def _excerpt(self, response: httpx.Response) -> str:
        text = response.text[:200].strip()
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text or "empty body"

    def _vectors(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            payload = response.json()
        except ValueError as exc:
            raise StorageError(
                f"embedding endpoint {self._url} answered HTTP {response.status_code} with "
                "a body that is not JSON; check ARCHIVIST_EMBEDDING__BASE_URL points at an "
                "OpenAI-compatible API (it usually ends in /v1)"
            ) from exc
        items = _ordered_items(payload, expected, self._url)
        for item in items:
            size = len(item["embedding"])
            if size != self._dim:
                raise ConfigurationError(
                    f"embedding model {self._model!r} returned {size}-dimensional vectors but "
                    f"the store holds {self._dim}; set ARCHIVIST_EMBEDDING__DIM={size} before "
                    "the first `archivist db upgrade`, or use another model"
                )
        try:
            return np.array([item["embedding"] for item in items], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise _malformed(self._url, "an embedding holds non-numbers") from exc


def _retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds, capped; an HTTP date or garbage falls back to backoff."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not np.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _ordered_items(payload: object, expected: int, url: str) -> list[dict[str, Any]]:
    """The ``data`` items sorted by ``index``, checked to be exactly 0..expected-1."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise _malformed(url, "the reply has no 'data' list")
    items: list[dict[str, Any]] = []
    for item in data:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("index"), int)
            and isinstance(item.get("embedding"), list)
        ):
            raise _malformed(url, "a 'data' item lacks an integer 'index' or an 'embedding' list")
        items.append(item)
    items.sort(key=lambda item: int(item["index"]))
    if [item["index"] for item in items] != list(range(expected)):
        raise _malformed(url, f"expected indexes 0..{expected - 1}, got {len(items)} items")
    return items


def _normalise(vectors: np.ndarray, url: str) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise _malformed(url, "an embedding is all zeros or not finite")
    normalised: np.ndarray = (vectors / norms).astype(np.float32)
    return normalised


def _malformed(url: str, what: str) -> StorageError:
    return StorageError(
        f"embedding endpoint {url} sent a malformed reply: {what}; "
        "check it implements the OpenAI /embeddings API"
    )
