"""The notifier against a real local HTTP server, and its artifact fallback."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import RedactionSettings, Settings, WatchdogSettings
from tasks.common import ARTIFACT_KEY, Notice, Notifier, notify_flow_failure
from tests.webhook_server import Webhook, webhook_server

AT = datetime(2026, 11, 20, 10, 15, tzinfo=UTC)
LOG = logging.getLogger("tests.notify")


@pytest.fixture
def hook() -> Iterator[Webhook]:
    with webhook_server() as server:
        yield server


def notice(check: str = "memory-sync-daily:stale") -> Notice:
    snapshots = [{"at": AT.isoformat(), "status": "anomaly", "summary": "stale for 30 h"}]
    return Notice("alert", check, "anomaly", "stale for 30 h", AT, snapshots, 2)


def webhook_settings(url: str, retries: int = 3) -> WatchdogSettings:
    return WatchdogSettings(webhook_url=url, webhook_retries=retries, webhook_backoff_seconds=0.01)


def test_payload_is_slack_text_plus_fields(hook: Webhook) -> None:
    with httpx.Client() as client:
        assert Notifier(webhook_settings(hook.url), client, LOG).publish([notice()]) == "webhook"
    [payload] = hook.received
    assert payload["text"].startswith(":rotating_light: Archivist anomaly: memory-sync-daily:stale")
    assert payload["check"] == "memory-sync-daily:stale"
    assert payload["status"] == "anomaly"
    assert payload["kind"] == "alert"
    assert payload["snapshots"][0]["summary"] == "stale for 30 h"


def test_retries_a_500_then_delivers(hook: Webhook) -> None:
    hook.statuses = [500, 503]
    with httpx.Client() as client:
        Notifier(webhook_settings(hook.url), client, LOG).publish([notice()])
    assert len(hook.received) == 3
    assert all(p["check"] == "memory-sync-daily:stale" for p in hook.received)


def test_gives_up_after_its_retries(hook: Webhook) -> None:
    hook.statuses = [500] * 10
    with httpx.Client() as client, pytest.raises(httpx.HTTPStatusError):
        Notifier(webhook_settings(hook.url, retries=2), client, LOG).publish([notice()])
    assert len(hook.received) == 3


def test_a_rejected_webhook_is_a_configuration_error(hook: Webhook) -> None:
    hook.statuses = [404]
    with httpx.Client() as client, pytest.raises(ConfigurationError, match="answered 404"):
        Notifier(webhook_settings(hook.url), client, LOG).publish([notice()])
    assert len(hook.received) == 1


def test_unreachable_webhook_raises_after_retries() -> None:
    settings = webhook_settings("http://127.0.0.1:9/hook", retries=1)
    with httpx.Client() as client, pytest.raises(httpx.ConnectError):
        Notifier(settings, client, LOG).publish([notice()])


async def _artifact_markdown(key: str) -> list[str]:
    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))
        )
    return [str(a.data) for a in found]


@flow(name="notify-artifact-probe")
def publish_without_webhook(check: str) -> str:
    return Notifier(WatchdogSettings(webhook_url=None), None, LOG).publish([notice(check)])


def test_without_webhook_an_artifact_and_a_warning(
    prefect_harness: None, caplog: pytest.LogCaptureFixture
) -> None:
    check = f"test-{id(caplog)}:paused"
    with caplog.at_level(logging.WARNING, logger="tests.notify"):
        channel = publish_without_webhook(check)
    assert channel == "artifact"
    assert any(check in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert any(check in markdown for markdown in asyncio.run(_artifact_markdown(ARTIFACT_KEY)))


@flow(name="notify-hook-probe", on_failure=[notify_flow_failure])
def failing_probe() -> None:
    raise RuntimeError("disk full on purpose")


def test_failure_hook_posts_at_once(
    flow_env: Settings, hook: Webhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVIST_WATCHDOG__WEBHOOK_URL", hook.url)
    state = failing_probe(return_state=True)
    assert state.is_failed()
    [payload] = hook.payloads("notify-hook-probe:run")
    assert payload["kind"] == "failure"
    assert "disk full on purpose" in payload["text"]
    assert payload["snapshots"][0]["state"] == "Failed"


def pii_notice() -> Notice:
    snapshots = [{"at": AT.isoformat(), "message": "alice@example.com at +49 30 12345678"}]
    summary = "sync failed on a message of alice@example.com from 192.168.1.20"
    return Notice("failure", "memory-sync-daily:run", "failed", summary, AT, snapshots)


def test_webhook_payload_is_redacted_with_one_scope_per_notice(hook: Webhook) -> None:
    with httpx.Client() as client:
        Notifier(webhook_settings(hook.url), client, LOG).publish([pii_notice()])
    [payload] = hook.received
    sent = json.dumps(payload)
    assert [v for v in ("alice@example.com", "30 12345678", "192.168.1.20") if v in sent] == []
    assert payload["summary"] == "sync failed on a message of <EMAIL_1> from <IP_1>"
    assert payload["text"].endswith(payload["summary"])
    assert payload["snapshots"][0]["message"] == "<EMAIL_1> at <PHONE_1>"


def test_webhook_payload_follows_the_redaction_settings(hook: Webhook) -> None:
    off = RedactionSettings(enabled=False)
    with httpx.Client() as client:
        Notifier(webhook_settings(hook.url), client, LOG, redaction=off).publish([pii_notice()])
    assert "alice@example.com" in hook.received[0]["summary"]


@flow(name="notify-pii-probe", on_failure=[notify_flow_failure])
def failing_pii_probe() -> None:
    raise RuntimeError("cannot parse the message of bob@example.com, ticket TCK-123456")


def test_failure_hook_redacts_the_error_it_posts(
    flow_env: Settings, hook: Webhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVIST_WATCHDOG__WEBHOOK_URL", hook.url)
    monkeypatch.setenv("ARCHIVIST_REDACTION__CUSTOM", '["TICKET=TCK-\\\\d{6}"]')
    assert failing_pii_probe(return_state=True).is_failed()
    [payload] = hook.payloads("notify-pii-probe:run")
    assert "cannot parse the message of <EMAIL_1>, ticket <TICKET_1>" in payload["text"]
    assert "bob@example.com" not in json.dumps(payload) and "TCK-123456" not in json.dumps(payload)
