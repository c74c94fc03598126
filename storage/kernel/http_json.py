"""JSON POSTs to OpenAI-compatible endpoints, and the retry loop around them.

``JsonApi`` is the one client of such an endpoint, which the HTTP embedder and the LLM
extractor both use: its URL, key, timeout and retries (``Connection``), over an httpx client
it makes and closes unless it is given one. Timeouts, connection errors, 408, 429
and 5xx are worth another try (a Retry-After in seconds wins, capped at 30 s); any other
error status is a refusal, raised at once as ``ConfigurationError`` with a hint of what
to check. No message ever contains the API key.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from storage.kernel.errors import ConfigurationError

T = TypeVar("T")

MAX_RETRY_AFTER = 30.0
RETRYABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

# (what failed, the server's Retry-After) of an attempt worth repeating
Failure = tuple[str, str | None]


@dataclass(frozen=True)
class Endpoint:
    """Where to POST, how to name it in errors, and what to suggest when it refuses."""

    url: str
    what: str
    url_setting: str
    api_key: str | None
    timeout: float
    hint: Callable[[int], str]

    def mask(self, text: str) -> str:
        """``text`` with the API key blanked out."""
        return text.replace(self.api_key, "***") if self.api_key else text


def post_json(
    client: httpx.Client, endpoint: Endpoint, body: dict[str, Any]
) -> httpx.Response | Failure:
    """One POST: the accepted response, or why another try may help; refusals raise."""
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    try:
        response = client.post(endpoint.url, json=body, headers=headers, timeout=endpoint.timeout)
    except httpx.UnsupportedProtocol as exc:
        raise ConfigurationError(
            f"{endpoint.what} {endpoint.url} is not an http(s) URL; check {endpoint.url_setting}"
        ) from exc
    except RETRYABLE_ERRORS as exc:
        return type(exc).__name__, None
    status = response.status_code
    if status in (408, 429) or status >= 500:
        return f"HTTP {status}", response.headers.get("Retry-After")
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        raise ConfigurationError(refusal(endpoint, response)) from exc
    return response


def refusal(endpoint: Endpoint, response: httpx.Response) -> str:
    """Why the endpoint refused, with the start of its answer and what to check."""
    excerpt = endpoint.mask(response.text[:200].strip()) or "empty body"
    return (
        f"{endpoint.what} {endpoint.url} refused the request "
        f"(HTTP {response.status_code}: {excerpt}); {endpoint.hint(response.status_code)}"
    )


def with_retries(
    attempt: Callable[[], T | Failure],
    *,
    max_retries: int,
    backoff: Sequence[float],
    sleep: Callable[[float], None],
) -> T | str:
    """Run ``attempt`` up to ``max_retries + 1`` times; the result, or the last failure."""
    attempts, failure = max_retries + 1, ""
    for number in range(1, attempts + 1):
        outcome = attempt()
        if not isinstance(outcome, tuple):
            return outcome
        failure, retry_after = outcome
        if number < attempts:
            sleep(retry_delay(number, retry_after, backoff))
    return failure


def retry_delay(attempt: int, retry_after: str | None, backoff: Sequence[float]) -> float:
    """The server's Retry-After if usable, else this attempt's step of the backoff."""
    server_says = retry_after_seconds(retry_after)
    if server_says is not None:
        return server_says
    return float(backoff[min(attempt - 1, len(backoff) - 1)])


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds, capped; an HTTP date or garbage falls back to backoff."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


@dataclass(frozen=True)
class Connection:
    """How to reach an OpenAI-compatible endpoint: its key, the time one request may take,
    how often a failed one is tried again and how long to wait between (the server's
    Retry-After wins), and an httpx client to use (None: one of the API's own)."""

    api_key: str | None = None
    timeout: float = 30.0
    max_retries: int = 3
    backoff_seconds: Sequence[float] = (0.5, 1, 2, 4, 8)
    sleep: Callable[[float], None] = time.sleep
    client: httpx.Client | None = None


class JsonApi:
    """POSTs of JSON to one endpoint, retried as its ``Connection`` says."""

    def __init__(self, endpoint: Endpoint, connection: Connection) -> None:
        if connection.max_retries < 0 or not connection.backoff_seconds:
            raise ConfigurationError(
                f"the {endpoint.what} needs max_retries >= 0 and a backoff sequence"
            )
        self.endpoint = endpoint
        self.connection = connection
        self._owns_client = connection.client is None
        self._client = connection.client or httpx.Client(timeout=connection.timeout)

    @property
    def attempts(self) -> int:
        return self.connection.max_retries + 1

    def post(self, body: dict[str, Any]) -> httpx.Response | str:
        """The accepted response, or the last failure once every attempt failed."""
        return self.retried(lambda: self.attempt(body))

    def attempt(self, body: dict[str, Any]) -> httpx.Response | Failure:
        """One POST: the accepted response, or why another try may help; refusals raise."""
        return post_json(self._client, self.endpoint, body)

    def retried(self, attempt: Callable[[], T | Failure]) -> T | str:
        """``attempt`` until it succeeds or the retries are spent (then the last failure)."""
        return with_retries(
            attempt,
            max_retries=self.connection.max_retries,
            backoff=self.connection.backoff_seconds,
            sleep=self.connection.sleep,
        )

    def close(self) -> None:
        """Close the httpx client if this API made it."""
        if self._owns_client:
            self._client.close()
