"""Sections of ``Settings`` (``storage.config``): the watchdog, the sync, serving, redaction,
documents.

``storage.config`` re-exports them; import them from there.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class WatchdogSettings(BaseModel):
    """When the watchdog calls something an anomaly, and where its alerts go."""

    # hide_input_in_errors: a webhook URL often carries its token.
    model_config = ConfigDict(hide_input_in_errors=True)

    webhook_url: SecretStr | None = Field(
        None, description="POST alerts here (Slack-compatible JSON); unset: Prefect artifact"
    )
    webhook_timeout: float = Field(10.0, gt=0, description="seconds per webhook request")
    webhook_retries: int = Field(3, ge=0, le=10, description="retries after the first attempt")
    webhook_backoff_seconds: float = Field(
        1.0, ge=0, description="retry n waits backoff * 2**(n-1) seconds"
    )
    alert_after: int = Field(2, ge=1, le=100, description="consecutive anomalies before alerting")
    reminder_hours: float = Field(24.0, gt=0, description="re-alert an ongoing anomaly after")
    stale_grace_minutes: float = Field(30.0, ge=0, description="slack on top of the interval")
    late_runs_threshold: int = Field(3, ge=0, description="more late runs than this: anomaly")
    queue_stuck_alert: int = Field(1, ge=1, description="this many stuck items: anomaly")
    queue_dead_alert: int = Field(1, ge=1, description="this many dead items: anomaly")
    queue_oldest_pending_minutes: float = Field(
        30.0, gt=0, description="a pending item older than this: anomaly"
    )


class SyncSettings(BaseModel):
    """Defaults of the daily sync; flow parameters override them per run."""

    window_hours: float = Field(26.0, gt=0)
    min_user_messages: int = Field(2, ge=0)
    batch_size: int = Field(500, ge=1, le=10_000)


class ServingSettings(BaseModel):
    """The HTTP API and the MCP server (``archivist api``, ``archivist mcp``)."""

    # hide_input_in_errors: the serving URL carries the serving role's password.
    model_config = ConfigDict(hide_input_in_errors=True)

    database_url: SecretStr | None = Field(
        None,
        description="URL that logs in as the serving role (archivist_serving); unset: the "
        "embedded server's URL with that user",
    )
    row_level_security: bool = Field(
        True, description="serve as archivist_serving, which sees one namespace per transaction"
    )
    host: str = Field("127.0.0.1", description="address archivist api and mcp listen on")
    api_port: int = Field(8765, ge=0, le=65535)
    mcp_port: int = Field(8766, ge=0, le=65535)
    pool_size: int = Field(
        16,
        ge=1,
        le=200,
        description="database connections kept open by archivist api (split across its "
        "--workers processes) or by one MCP server",
    )
    max_body_bytes: int = Field(65_536, ge=1024, le=16_777_216, description="larger: 413")


_CUSTOM_RULE = re.compile(r"^([A-Z][A-Z0-9_]{0,29})=(.+)$", re.DOTALL)


class RedactionSettings(BaseModel):
    """PII redaction of the text that leaves the machine (and, optionally, what is stored)."""

    # hide_input_in_errors: a custom pattern may quote the very values it is meant to hide.
    model_config = ConfigDict(hide_input_in_errors=True)

    enabled: bool = Field(True, description="redact text sent to the llm, embedder and webhook")
    emails: bool = True
    phones: bool = True
    cards: bool = Field(True, description="payment card numbers that pass the Luhn check")
    ibans: bool = Field(True, description="IBANs that pass their country format and checksum")
    ips: bool = Field(True, description="IPv4 and IPv6 addresses")
    addresses: bool = Field(True, description="street addresses (best effort, en/de/fr/es)")
    custom: list[str] = Field(
        default_factory=list,
        description='extra categories as NAME=regex, e.g. ["TICKET=TCK-[0-9]{6}"] (JSON list)',
    )
    phone_regions: list[str] = Field(
        default_factory=lambda: ["US", "GB", "DE", "FR", "ES"],
        description="countries whose national phone formats (no +country code) are sought",
    )
    before_storage: bool = Field(
        False, description="also redact transcripts and queued writes before they are stored"
    )

    @field_validator("custom")
    @classmethod
    def _custom_rules(cls, rules: list[str]) -> list[str]:
        for number, rule in enumerate(rules, 1):
            found = _CUSTOM_RULE.match(rule)
            if found is None:
                raise ValueError(
                    f"custom rule {number} is not NAME=regex with NAME in A-Z, 0-9 and _"
                )
            try:
                re.compile(found.group(2))
            except re.error as exc:  # the message names the position, not the pattern
                raise ValueError(f"custom rule {found.group(1)}: bad regex ({exc.msg})") from None
        return rules

    @field_validator("phone_regions")
    @classmethod
    def _regions(cls, regions: list[str]) -> list[str]:
        bad = [r for r in regions if not re.fullmatch(r"[A-Z]{2}", r)]
        if bad:
            raise ValueError(f"phone regions must be ISO country codes like DE, not {bad}")
        return regions

    def custom_rules(self) -> list[tuple[str, re.Pattern[str]]]:
        """The custom categories as (NAME, compiled pattern), in the order given."""
        pairs = [_CUSTOM_RULE.match(rule) for rule in self.custom]
        return [(m.group(1), re.compile(m.group(2))) for m in pairs if m is not None]


class DocumentSettings(BaseModel):
    """Knowledge documents (``archivist docs``): chunking, and what ingest refuses."""

    chunk_size: int = Field(
        1200, ge=100, le=20_000, description="characters per chunk, at most (--chunk-size)"
    )
    overlap: int = Field(
        150, ge=0, le=5_000, description="characters a long section's chunks share (--overlap)"
    )
    max_file_bytes: int = Field(
        50 * 1024 * 1024, ge=1, description="larger files are skipped (reason: too_large)"
    )
    feedback_step: float = Field(
        0.1, gt=0, le=0.5, description="importance a chunk gains or loses per +1 / -1"
    )
    embed_batch: int = Field(256, ge=1, le=10_000, description="chunks embedded together")


class PrefectSettings(BaseModel):
    """How the CLI's flow commands reach Prefect when ``PREFECT_API_URL`` chooses no server:
    a local server that the first of them starts and keeps (``deployments.local_prefect``)."""

    startup_seconds: float = Field(
        300.0,
        gt=0,
        le=3600,
        description="how long a flow command waits for the local Prefect server it starts to "
        "answer (4-10 s on an idle machine, several times that on a busy one)",
    )


class QueueSettings(BaseModel):
    """The durable write queue (seed 000), every threshold configurable."""

    claim_batch: int = Field(20, ge=1, le=1000)
    max_attempts: int = Field(3, ge=1, le=50)
    backoff_base_seconds: float = Field(2.0, gt=0, description="retry n waits base * 2**(n-1)")
    backoff_max_seconds: float = Field(300.0, gt=0)
    stuck_after_seconds: float = Field(600.0, gt=0, description="processing longer is reclaimed")
    detect_gone_workers: bool = Field(
        True,
        description="reclaim at once what a worker whose backend left pg_stat_activity held; "
        "off behind a transaction-pooling proxy or where other sessions are hidden",
    )
    purge_completed_after_hours: float = Field(24.0, gt=0)
    poll_seconds: float = Field(0.2, gt=0, description="continuous worker's idle poll")
    fold_seconds: float = Field(
        60.0,
        gt=0,
        description="how often the continuous worker adds the accesses searches counted to "
        "their memories' counters (as each memory-queue-drain run does)",
    )
