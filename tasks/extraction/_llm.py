"""Extractor for OpenAI-compatible ``/chat/completions`` endpoints (OpenAI, vLLM, Ollama, ...).

One request per session state asks for one JSON object (``_prompt``),
validated by ``_reply``. Timeouts, connection errors, 408, 429, 5xx and
replies that are not valid JSON of that schema are retried with backoff (a Retry-After in
seconds wins, capped); when the retries are used up the session gets the fallback
extractor's result and ``tokens["fallback"] = 1``, so one bad session never stops a run.
The transcript is redacted first (``_redact``); the reply's placeholders are restored.
Settings that cannot work (bad key, wrong URL or model, a request the server refuses)
raise ``ConfigurationError`` at once. No message ever contains the API key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import httpx

from storage.kernel.errors import ConfigurationError, DataQualityError
from storage.kernel.http_json import Connection, Endpoint, Failure, JsonApi
from storage.kernel.records import SessionState
from storage.redaction import RedactionPolicy
from tasks.extraction._heuristic import HeuristicExtractor
from tasks.extraction._prompt import SYSTEM_PROMPT, transcript
from tasks.extraction._redact import redact_state, restore_reply
from tasks.extraction._reply import Reply, parse_reply, to_extraction
from tasks.extraction._types import Extraction, Extractor

__all__ = ["LLMExtractor"]

logger = logging.getLogger(__name__)


@dataclass
class _Usage:
    """Requests sent and tokens the server reported, over all attempts for one session."""

    calls: int = 0
    prompt: int = 0
    completion: int = 0

    def add(self, payload: object) -> None:
        usage = payload.get("usage") if isinstance(payload, dict) else None
        if isinstance(usage, dict):
            self.prompt += _count(usage.get("prompt_tokens"))
            self.completion += _count(usage.get("completion_tokens"))

    def tokens(self, *, fallback: bool) -> dict[str, int]:
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "llm_calls": self.calls,
            "fallback": int(fallback),
        }


class LLMExtractor(Extractor):
    """Asks a chat model for the episode and facts; falls back when the model fails."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        connection: Connection | None = None,
        max_input_chars: int = 60_000,
        fallback: Extractor | None = None,
        redaction: RedactionPolicy | None = None,
    ) -> None:
        if max_input_chars < 1:
            raise ConfigurationError("LLMExtractor needs max_input_chars >= 1")
        connection = connection or Connection(
            timeout=60.0, max_retries=2, backoff_seconds=(1, 2, 4, 8)
        )
        self._url = base_url.rstrip("/") + "/chat/completions"
        endpoint = Endpoint(
            url=self._url,
            what="llm endpoint",
            url_setting="ARCHIVIST_EXTRACTOR__BASE_URL",
            api_key=connection.api_key,
            timeout=connection.timeout,
            hint=self._hint,
        )
        self._api = JsonApi(endpoint, connection)
        self._model = model
        self._max_input_chars = max_input_chars
        self._fallback: Extractor = fallback if fallback is not None else HeuristicExtractor()
        # No policy given: the defaults, every category on; nothing leaves unredacted by omission.
        self._redaction = (
            redaction if redaction is not None else RedactionPolicy.from_settings(None)
        )

    @property
    def name(self) -> str:
        """Identifier recorded with every memory this extractor writes."""
        return f"llm:{self._model}"[:100]

    def close(self) -> None:
        """Close the HTTP client if this extractor created it."""
        self._api.close()

    def extract(self, state: SessionState) -> Extraction:
        """The model's episode and facts with the fallback's turns, or the fallback's result."""
        base = self._fallback.extract(state)
        usage = _Usage()
        redactor = self._redaction.redactor()
        outcome = self._ask(redact_state(state, redactor), usage)
        counts = dict(redactor.counts)
        if isinstance(outcome, Reply):
            if not self._redaction.before_storage:
                outcome = restore_reply(outcome, redactor)
            extraction = to_extraction(state, outcome, base)
            return replace(extraction, tokens=usage.tokens(fallback=False), redactions=counts)
        logger.warning(
            "llm extractor %s failed on session %s (%s) after %d requests; using %s instead",
            self._url,
            state.session.id,
            outcome,
            usage.calls,
            self._fallback.name,
        )
        return replace(base, tokens=usage.tokens(fallback=True), redactions=counts)

    def _ask(self, state: SessionState, usage: _Usage) -> Reply | str:
        """The validated reply, or what went wrong on the last of ``max_retries + 1`` tries."""
        body = self._body(state)
        return self._api.retried(lambda: self._attempt(body, usage))

    def _body(self, state: SessionState) -> dict[str, Any]:
        return {
            "model": self._model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": transcript(state, self._max_input_chars)},
            ],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }

    def _attempt(self, body: dict[str, Any], usage: _Usage) -> Reply | Failure:
        """One request: the validated reply, or why it is worth another try."""
        response = self._send(body, usage)
        if not isinstance(response, httpx.Response):
            return response
        try:
            payload = response.json()
        except ValueError:
            return "the body is not JSON", None
        usage.add(payload)
        try:
            return parse_reply(_content(payload))
        except DataQualityError as exc:
            return str(exc), None

    def _send(self, body: dict[str, Any], usage: _Usage) -> httpx.Response | Failure:
        usage.calls += 1
        return self._api.attempt(body)

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return "check ARCHIVIST_EXTRACTOR__API_KEY"
        if status == 404:
            return "check ARCHIVIST_EXTRACTOR__BASE_URL (usually ends in /v1) and __MODEL"
        return (
            f"check model {self._model!r} accepts response_format json_object and "
            "inputs of ARCHIVIST_EXTRACTOR__MAX_INPUT_CHARS characters"
        )


def _content(payload: object) -> str:
    """The first choice's message text of a chat-completions reply."""
    try:
        content = payload["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError) as exc:
        raise DataQualityError("the reply has no choices[0].message.content") from exc
    if not isinstance(content, str):
        raise DataQualityError("choices[0].message.content is not text")
    return content


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
