"""Extractor that runs a local program: session JSON on stdin, the reply JSON on stdout.

The program gets ``{"session": {...}, "messages": [{id, role, speaker, content,
timestamp}], "fingerprint": "..."}`` (oldest messages dropped past the input budget) and
writes the same JSON object the llm extractor asks a model for (``_reply``).
A nonzero exit, a timeout or a reply that fails the schema gives the fallback's result with
``tokens["fallback"] = 1`` and a warning; a program that cannot be started at all is a
``ConfigurationError``. The program may send the text anywhere (a wrapper around a hosted
model), so its input is redacted like the llm extractor's and its reply restored.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Sequence
from dataclasses import replace

from storage.kernel.errors import ConfigurationError, DataQualityError
from storage.kernel.records import SessionState
from storage.redaction import RedactionPolicy, Redactor
from tasks.extraction._heuristic import HeuristicExtractor
from tasks.extraction._prompt import command_payload
from tasks.extraction._redact import redact_state, restore_reply
from tasks.extraction._reply import Reply, parse_reply, to_extraction
from tasks.extraction._types import Extraction, Extractor

__all__ = ["CommandExtractor"]

logger = logging.getLogger(__name__)


class CommandExtractor(Extractor):
    """Runs ``argv`` (no shell) once per session state and reads its JSON reply."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        max_input_chars: int = 60_000,
        fallback: Extractor | None = None,
        redaction: RedactionPolicy | None = None,
    ) -> None:
        if not argv or timeout <= 0:
            raise ConfigurationError("CommandExtractor needs a program and a positive timeout")
        self._argv = list(argv)
        self._timeout = timeout
        self._max_input_chars = max_input_chars
        self._fallback: Extractor = fallback if fallback is not None else HeuristicExtractor()
        self._redaction = (
            redaction if redaction is not None else RedactionPolicy.from_settings(None)
        )

    @property
    def name(self) -> str:
        """Identifier recorded with every memory this extractor writes."""
        program = " ".join([os.path.basename(self._argv[0]), *self._argv[1:]])
        return f"command:{program}"[:100]

    def extract(self, state: SessionState) -> Extraction:
        """The program's episode and facts with the fallback's turns, or the fallback's result."""
        base = self._fallback.extract(state)
        redactor = self._redaction.redactor()
        try:
            reply = self._run(redact_state(state, redactor))
        except DataQualityError as exc:
            logger.warning(
                "extractor command %s failed on session %s (%s); using %s instead",
                self._argv[0],
                state.session.id,
                exc,
                self._fallback.name,
            )
            return replace(base, tokens={"fallback": 1}, redactions=dict(redactor.counts))
        reply = self._restored(reply, redactor)
        extraction = to_extraction(state, reply, base)
        return replace(extraction, tokens={"fallback": 0}, redactions=dict(redactor.counts))

    def _restored(self, reply: Reply, redactor: Redactor) -> Reply:
        return reply if self._redaction.before_storage else restore_reply(reply, redactor)

    def _run(self, state: SessionState) -> Reply:
        """The program's validated reply; DataQualityError when it fails or answers nonsense."""
        stdin = json.dumps(command_payload(state, self._max_input_chars), ensure_ascii=False)
        try:
            done = subprocess.run(
                self._argv,
                input=stdin,
                capture_output=True,
                encoding="utf-8",
                errors="replace",
                timeout=self._timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise DataQualityError(
                f"no reply within {self._timeout:g} s; stderr: {_excerpt(exc.stderr)}"
            ) from exc
        except OSError as exc:
            raise ConfigurationError(
                f"extractor command {self._argv[0]!r} cannot be started ({exc.strerror}); "
                "check ARCHIVIST_EXTRACTOR__COMMAND"
            ) from exc
        if done.returncode != 0:
            stderr = _excerpt(done.stderr)
            raise DataQualityError(f"exit status {done.returncode}; stderr: {stderr}")
        try:
            return parse_reply(done.stdout)
        except DataQualityError as exc:
            raise DataQualityError(f"{exc}; stderr: {_excerpt(done.stderr)}") from exc


def _excerpt(stderr: str | bytes | None) -> str:
    """The first 200 characters of the program's stderr, for the warning."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", errors="replace")
    return (stderr or "").strip()[:200] or "(empty)"
