"""Where watchdog notices and flow-failure notices go.

With ``ARCHIVIST_WATCHDOG__WEBHOOK_URL`` set: one JSON POST per notice (Slack-compatible
``text`` plus structured fields), retried with exponential backoff on timeouts, 429 and
5xx. Without it: a Prefect markdown artifact ``memory-watchdog-alerts`` and a WARNING log
line per notice, so an alert is never only in a database row. Either way each notice is
redacted first (``storage.redaction``, one placeholder scope per notice): a failure message
may quote a transcript, and the webhook or the Prefect API may be another machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import MissingContextError
from prefect.logging import get_logger, get_run_logger
from sqlalchemy.orm import Session

from storage import runs
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import RedactionSettings, Settings, WatchdogSettings
from storage.redaction import RedactionPolicy
from storage.server.engine import open_store
from tasks.common._notice import Notice

ARTIFACT_KEY = "memory-watchdog-alerts"
Channel = Literal["webhook", "artifact", "none"]
Logger = logging.Logger | logging.LoggerAdapter[Any]


class Notifier:
    """Sends notices to the webhook, or to an artifact and the log when there is none."""

    def __init__(
        self,
        settings: WatchdogSettings,
        client: httpx.Client | None,
        logger: Logger,
        sleep: Callable[[float], None] = time.sleep,
        redaction: RedactionSettings | None = None,
    ) -> None:
        if settings.webhook_url is not None and client is None:
            raise ConfigurationError("a webhook notifier needs an httpx.Client")
        self._redaction = RedactionPolicy.from_settings(redaction)  # None: the defaults
        self._settings = settings
        self._client = client
        self._logger = logger
        self._sleep = sleep

    def publish(self, notices: Sequence[Notice]) -> Channel:
        """Deliver every notice; returns where they went."""
        if not notices:
            return "none"
        notices = [self._redacted(notice) for notice in notices]
        url = self._settings.webhook_url
        if url is None or self._client is None:
            self._to_artifact(notices)
            return "artifact"
        for notice in notices:
            self._post(self._client, url.get_secret_value(), notice.payload())
        return "webhook"

    def _redacted(self, notice: Notice) -> Notice:
        redactor = self._redaction.redactor()
        return replace(
            notice,
            check=redactor.redact(notice.check),
            status=redactor.redact(notice.status),
            summary=redactor.redact(notice.summary),
            snapshots=redactor.redact_all(notice.snapshots),
        )

    def _post(self, client: httpx.Client, url: str, payload: dict[str, Any]) -> None:
        attempts = self._settings.webhook_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                response = client.post(url, json=payload, timeout=self._settings.webhook_timeout)
            except httpx.TransportError:
                if attempt == attempts:
                    raise
                self._backoff(attempt)
                continue
            if _retryable(response) and attempt < attempts:
                self._backoff(attempt)
                continue
            _raise_for_status(response)
            return

    def _backoff(self, attempt: int) -> None:
        self._sleep(self._settings.webhook_backoff_seconds * 2 ** (attempt - 1))

    def _to_artifact(self, notices: Sequence[Notice]) -> None:
        for notice in notices:
            self._logger.warning("%s", notice.text())
        create_markdown_artifact(
            key=ARTIFACT_KEY,
            markdown=render_markdown(notices),
            description="Archivist watchdog alerts (no webhook configured)",
        )


def _retryable(response: httpx.Response) -> bool:
    return response.status_code == 429 or response.status_code >= 500


def _raise_for_status(response: httpx.Response) -> None:
    """5xx after the last retry propagates as is; any other 4xx is a configuration fault."""
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        if _retryable(response):
            raise
        raise ConfigurationError(
            f"the alert webhook answered {response.status_code}; "
            "check ARCHIVIST_WATCHDOG__WEBHOOK_URL"
        ) from exc


def render_markdown(notices: Sequence[Notice]) -> str:
    """The artifact: one section per notice with its snapshots as a table."""
    parts = ["# Archivist watchdog", ""]
    for notice in notices:
        parts += [f"## {notice.kind}: `{notice.check}`", "", notice.text(), ""]
        if notice.snapshots:
            parts += ["| at | status | summary |", "| --- | --- | --- |"]
            parts += [
                f"| {s.get('at', '')} | {s.get('status', '')} | {s.get('summary', '')} |"
                for s in notice.snapshots
            ]
            parts.append("")
    return "\n".join(parts)


@contextmanager
def open_notifier(
    settings: WatchdogSettings, logger: Logger, redaction: RedactionSettings | None = None
) -> Iterator[Notifier]:
    """A notifier with its own HTTP client when a webhook is configured."""
    if settings.webhook_url is None:
        yield Notifier(settings, None, logger, redaction=redaction)
        return
    with httpx.Client(timeout=settings.webhook_timeout) as client:
        yield Notifier(settings, client, logger, redaction=redaction)


def record_failure(settings: Settings, flow_run_id: str, state: Any) -> None:
    """Mark the flow run's ``runs`` row failed or crashed, so it does not stay ``running``.

    The reason names the Prefect flow run, never the error's text (it may quote content).
    Best effort: when the store itself is what failed, the next run marks the row later.
    """
    status = "crashed" if str(getattr(state, "name", "")).lower() == "crashed" else "failed"
    reason = f"the flow run {status}; its error is in Prefect's flow run {flow_run_id}"
    try:
        engine = open_store(settings).engine
        with Session(engine) as session, session.begin():
            runs.end_flow_run(session, flow_run_id, status, reason)
    except Exception as exc:  # noqa: BLE001 - a hook must never raise over the real failure
        run_logger().warning("could not record the %s run: %s", status, type(exc).__name__)


def run_logger() -> Logger:
    """The flow run's logger (visible in the UI), or a plain one outside a run."""
    try:
        return get_run_logger()
    except MissingContextError:
        return get_logger("archivist.notify")


def failure_notice(flow_name: str, run_name: str, run_id: str, state: Any) -> Notice:
    """An immediate notice for a failed or crashed flow run."""
    message = str(getattr(state, "message", "") or "")
    name = str(getattr(state, "name", "Failed"))
    return Notice(
        kind="failure",
        check=f"{flow_name}:run",
        status=name.lower(),
        summary=f"flow run {run_name} {name}: {message}".rstrip(": "),
        at=datetime.now(UTC),
        snapshots=[
            {"flow_run": run_name, "flow_run_id": run_id, "state": name, "message": message}
        ],
    )


def notify_flow_failure(flow: Any, flow_run: Any, state: Any) -> None:
    """``on_failure`` / ``on_crashed`` hook: close the run's row, tell the operator now."""
    settings = Settings()
    record_failure(settings, str(flow_run.id), state)
    ws = settings.watchdog
    notice = failure_notice(str(flow.name), str(flow_run.name), str(flow_run.id), state)
    with open_notifier(ws, run_logger(), settings.redaction) as notifier:
        notifier.publish([notice])
