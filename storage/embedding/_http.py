"""Embedder for OpenAI-compatible ``/embeddings`` endpoints (OpenAI, Jina, Ollama, TEI, vLLM).

Requests and retries go through ``storage.kernel.http_json``: timeouts, connection errors, 408,
429 and 5xx are retried with backoff; other 4xx are not. Settings problems (bad key,
wrong URL or model, wrong dimension) raise ``ConfigurationError``; an endpoint that stays
unavailable or answers nonsense raises ``StorageError``. No message contains the API key.

Every text is redacted before it is sent (``storage.redaction``), each in a scope of its
own: a text's placeholders, and so its vector, do not depend on the batch it came in,
which the vector cache (keyed by the original text) relies on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.http_json import Connection, Endpoint, JsonApi
from storage.redaction import RedactionPolicy


class OpenAIEmbedder:
    """POSTs ``{"model", "input"}`` batches and returns L2-normalised float32 rows."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        *,
        connection: Connection | None = None,
        batch_size: int = 64,
        redaction: RedactionPolicy | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError("OpenAIEmbedder needs batch_size >= 1")
        connection = connection or Connection()
        self._url = base_url.rstrip("/") + "/embeddings"
        endpoint = Endpoint(
            url=self._url,
            what="embedding endpoint",
            url_setting="ARCHIVIST_EMBEDDING__BASE_URL",
            api_key=connection.api_key,
            timeout=connection.timeout,
            hint=self._hint,
        )
        self._api = JsonApi(endpoint, connection)
        self._model = model
        self._dim = dim
        self._batch_size = batch_size
        # No policy given: the defaults, every category on; nothing leaves unredacted by omission.
        self._redaction = (
            redaction if redaction is not None else RedactionPolicy.from_settings(None)
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        return self._dim

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        self._api.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in batches of ``batch_size``; rows follow the input order."""
        parts = [
            self._embed_batch(texts[start : start + self._batch_size])
            for start in range(0, len(texts), self._batch_size)
        ]
        if not parts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        """The text's `embed` vector: one request."""
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def _embed_batch(self, batch: Sequence[str]) -> np.ndarray:
        sent = [self._redaction.redactor().redact(text) for text in batch]
        response = self._post({"model": self._model, "input": sent})
        return _normalise(self._vectors(response, len(batch)), self._url)

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        outcome = self._api.post(body)
        if isinstance(outcome, httpx.Response):
            return outcome
        raise StorageError(
            f"embedding endpoint {self._url} failed ({outcome}) after "
            f"{self._api.attempts} attempts; check the server is up and not overloaded, "
            "or raise ARCHIVIST_EMBEDDING__TIMEOUT_SECONDS / ARCHIVIST_EMBEDDING__MAX_RETRIES"
        )

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return "check ARCHIVIST_EMBEDDING__API_KEY"
        if status == 404:
            return "check ARCHIVIST_EMBEDDING__BASE_URL and ARCHIVIST_EMBEDDING__MODEL"
        return (
            f"check model {self._model!r} exists there and accepts batches of "
            f"{self._batch_size} (ARCHIVIST_EMBEDDING__BATCH_SIZE)"
        )

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
