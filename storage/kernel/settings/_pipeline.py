"""Settings of the pipeline's flows: the sync, session summaries, the write queue, the
weekly tidy, ageing, quality reports, the watchdog, documents and the local Prefect server."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class PipelineSettings(BaseModel):
    """How the flows, the workers and the CLI's pipeline commands reach the store."""

    # hide_input_in_errors: the URL carries the pipeline role's password.
    model_config = ConfigDict(hide_input_in_errors=True)

    database_url: SecretStr | None = Field(
        None,
        description="URL that logs in as the pipeline role (archivist_pipeline: every "
        "namespace's rows, no schema changes; archivist db roles prints it); unset: "
        "ARCHIVIST_DATABASE_URL, else the embedded server as its owner",
    )


class SyncSettings(BaseModel):
    """Defaults of the daily sync; flow parameters override them per run."""

    window_hours: float = Field(
        26.0,
        gt=0,
        description="look-back: sessions with a message in (as_of - this, as_of] are read",
    )
    min_user_messages: int = Field(
        2, ge=0, description="sessions with fewer user messages are skipped and counted"
    )
    batch_size: int = Field(500, ge=1, le=10_000, description="sessions written in one transaction")


class SummariesSettings(BaseModel):
    """Near-real-time session summaries: idle sessions get their memory within minutes."""

    idle_minutes: float = Field(
        30.0, gt=0, description="a session quiet this long gets its memory (still active: later)"
    )
    window_hours: float = Field(26.0, gt=0, description="how far back idle sessions are sought")
    min_user_messages: int = Field(1, ge=0, description="short sessions are kept by default")


class QueueSettings(BaseModel):
    """The durable write queue (seed 000), every threshold configurable."""

    claim_batch: int = Field(
        20, ge=1, le=1000, description="items claimed at once by a drainer (FOR UPDATE SKIP LOCKED)"
    )
    max_attempts: int = Field(
        3,
        ge=1,
        le=50,
        description="attempts before an item is dead, for the items archivist enqueue queues "
        "(the API's and MCP's writes, and enqueue() without max_attempts=, get 3)",
    )
    backoff_base_seconds: float = Field(2.0, gt=0, description="retry n waits base * 2**(n-1)")
    backoff_max_seconds: float = Field(300.0, gt=0, description="longest wait before a retry")
    stuck_after_seconds: float = Field(600.0, gt=0, description="processing longer is reclaimed")
    detect_gone_workers: bool = Field(
        True,
        description="reclaim at once what a worker whose backend left pg_stat_activity held; "
        "off behind a transaction-pooling proxy or where other sessions are hidden",
    )
    purge_completed_after_hours: float = Field(
        24.0, gt=0, description="completed items are kept this long, then purged"
    )
    poll_seconds: float = Field(0.2, gt=0, description="continuous worker's idle poll")
    fold_seconds: float = Field(
        60.0,
        gt=0,
        description="how often the continuous worker adds the accesses searches counted to "
        "their memories' counters (as each memory-queue-drain run does)",
    )


class TidySettings(BaseModel):
    """The weekly tidy (seed 004): the long-term MEMORY.md and its hard caps."""

    max_lines: int = Field(
        80, ge=5, le=10_000, description="hard cap on MEMORY.md's lines, everything counted"
    )
    max_bytes: int = Field(
        5 * 1024, ge=256, le=10_000_000, description="hard cap on MEMORY.md's size in bytes"
    )
    days: int = Field(7, ge=1, le=60, description="daily logs consolidated per run")


class AgingSettings(BaseModel):
    """Salience decay, compression, cold archive and (opt-in) deletion (seeds 001-003)."""

    half_life_days: float = Field(
        30.0, gt=0, description="salience halves every this many days without an access"
    )
    salience_epsilon: float = Field(0.01, ge=0, description="smaller changes are not written")
    decay_batch: int = Field(50_000, ge=100, description="ids per salience decay statement")
    compress_after_days: float = Field(
        90.0, gt=0, description="sessions whose last message is older are compressed"
    )
    archive_after_days: float = Field(
        365.0, gt=0, description="memories older than this move to the cold Parquet tier"
    )
    delete_after_days: float = Field(
        730.0, gt=0, description="older memories, transcripts and sessions are deleted, if enabled"
    )
    deletion_enabled: bool = Field(
        False, description="run the deletion step (off: nothing is ever deleted)"
    )
    archive_url: str | None = Field(
        None, description="fsspec URL of the cold Parquet tier; default <data_dir>/archive"
    )
    archive_batch: int = Field(
        50_000, ge=100, description="old memories read at once by archival (one file per year)"
    )
    access_log_days: float = Field(
        90.0,
        gt=0,
        description="searches and primings stay in memory_access_log (with their query's text "
        "and the ids they returned) this long; memory-aging counts older ones by namespace and "
        "day into memory_access_daily and deletes them",
    )


class QualitySettings(BaseModel):
    """Data-quality reports: a folder of Data Docs HTML and the name of their site."""

    reports_dir: Path | None = Field(
        None, description="Data Docs and other reports; default <data_dir>/reports"
    )
    site_name: str = Field(
        "archivist_site",
        pattern=r"^[a-z][a-z0-9_]{0,49}$",
        description="Great Expectations Data Docs site name",
    )
    examples: int = Field(5, ge=0, le=50, description="failing rows named per expectation")

    @field_validator("site_name")
    @classmethod
    def _not_the_builtin_site(cls, value: str) -> str:
        if value == "local_site":
            # Every Great Expectations context already has a `local_site` in a temp folder.
            raise ValueError("site name local_site is taken by Great Expectations; pick another")
        return value


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
    max_upload_bytes: int = Field(
        2 * 1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="a document added over the HTTP API or MCP (its bytes: the text's UTF-8, "
        "or the decoded base64) larger than this is refused (413); larger files go in with "
        "archivist docs ingest. A drainer must embed one within "
        "ARCHIVIST_QUEUE__STUCK_AFTER_SECONDS (bench/docs_upload.py)",
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
