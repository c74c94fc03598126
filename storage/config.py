"""The one `Settings` object: built once at an entry point and passed down.

Environment variables use the prefix ``ARCHIVIST_`` and ``__`` for nested fields, for
example ``ARCHIVIST_EMBEDDING__DIM=384`` or ``ARCHIVIST_SYNC__WINDOW_HOURS=26``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from storage.config_sections import DocumentSettings as DocumentSettings
from storage.config_sections import PrefectSettings as PrefectSettings
from storage.config_sections import QueueSettings as QueueSettings
from storage.config_sections import RedactionSettings as RedactionSettings
from storage.config_sections import ServingSettings as ServingSettings
from storage.config_sections import SyncSettings as SyncSettings
from storage.config_sections import WatchdogSettings as WatchdogSettings
from storage.errors import ConfigurationError


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "archivist"


class EmbeddingSettings(BaseModel):
    """Which embedder turns text into vectors, and the vector size the schema stores."""

    # Validation errors would otherwise echo the raw input, API key included.
    model_config = ConfigDict(hide_input_in_errors=True)

    provider: Literal["local", "hashing", "openai"] = Field(
        "local",
        description="local: all-MiniLM-L6-v2 here; hashing: no model; openai: an endpoint",
    )
    dim: int = Field(384, ge=8, le=4096)
    threads: int | None = Field(
        None,
        ge=1,
        le=64,
        description="CPU threads of the local embedder (default: one per core; one for "
        "a query on the int8 graph)",
    )
    query_encoder: Literal["int8", "float32"] = Field(
        "int8",
        description="the local model's weights for search queries: int8 (2.5 times cheaper, "
        "mean cosine 0.99 with float32's) or float32; memories are always embedded in float32",
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible API root, e.g. http://localhost:11434/v1"
    )
    model: str | None = Field(None, description="model name sent to the /embeddings endpoint")
    api_key: SecretStr | None = None
    batch_size: int = Field(64, ge=1, le=2048)
    graph_cache_dir: Path | None = Field(
        None,
        description="where the local model's built graph is kept between processes; "
        "default $XDG_CACHE_HOME/archivist or ~/.cache/archivist",
    )
    timeout_seconds: float = Field(30.0, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    cache: Literal["auto", "on", "off"] = Field(
        "auto",
        description="keep vectors in the embedding_cache table; auto: for remote models only",
    )

    @model_validator(mode="after")
    def _provider_needs(self) -> EmbeddingSettings:
        if self.provider == "local" and self.dim != 384:
            raise ValueError(
                f"the local embedder makes 384-dimensional vectors, not ARCHIVIST_EMBEDDING__DIM="
                f"{self.dim}; unset it or set 384"
            )
        missing = [
            f"ARCHIVIST_EMBEDDING__{field.upper()}"
            for field in ("base_url", "model")
            if self.provider == "openai" and not getattr(self, field)
        ]
        if missing:
            raise ValueError(f"the openai embedding provider needs {' and '.join(missing)}")
        return self


class RetrievalSettings(BaseModel):
    """How search ranks and how much it fetches; weights may come from the policy file."""

    preset: Literal["archivist", "librarian"] = "archivist"
    weights: dict[str, float] | None = Field(
        None, description="custom factor weights, replacing the preset's"
    )
    half_life_days: float = Field(30.0, gt=0)
    overfetch: int = Field(2, ge=1, le=20)
    dense_share: float = Field(
        0.5, ge=0, le=1, description="share of dense cosine in the fused relevance (rest BM25)"
    )
    ann_min_namespace_rows: int = Field(
        2_000, ge=100, description="namespaces this large get the HNSW index"
    )
    ef_search: int = Field(100, ge=10, le=1000)
    stats_ttl_seconds: float = Field(
        300.0, ge=0, description="how long BM25 statistics are reused in-process (0: never)"
    )
    min_cosine: float | None = Field(
        None,
        ge=-1,
        le=1,
        description="a query with no word match needs a candidate this close; default: embedder's",
    )
    max_limit: int = Field(100, ge=1, le=1000)
    prepared_statements: bool = Field(
        True,
        description="search's statements planned once per connection (off behind a pooler "
        "in transaction mode that cannot keep prepared statements)",
    )
    prime_episodes: int = Field(3, ge=0, le=50)
    prime_min_salience: float = Field(0.3, ge=0, le=1)
    prime_threads: int = Field(5, ge=0, le=50)
    prime_facts: int = Field(10, ge=0, le=100)


class ExtractorSettings(BaseModel):
    """Which extractor turns a session state into an episode and memories (seed 001)."""

    model_config = ConfigDict(hide_input_in_errors=True)

    mode: Literal["heuristic", "llm", "command", "none"] = "heuristic"
    base_url: str | None = Field(None, description="OpenAI-compatible API root, for llm")
    model: str | None = Field(None, description="chat model name, for llm")
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    max_input_chars: int = Field(
        60_000, ge=1000, description="longer sessions are cut from the start for llm/command"
    )
    command: list[str] | None = Field(
        None, description="program and arguments, for command mode (JSON list)"
    )

    @model_validator(mode="after")
    def _mode_needs_its_settings(self) -> ExtractorSettings:
        if self.mode == "llm" and not (self.base_url and self.model):
            raise ValueError(
                "the llm extractor needs ARCHIVIST_EXTRACTOR__BASE_URL and "
                "ARCHIVIST_EXTRACTOR__MODEL"
            )
        if self.mode == "command" and not self.command:
            raise ValueError("the command extractor needs ARCHIVIST_EXTRACTOR__COMMAND")
        return self


class SummariesSettings(BaseModel):
    """Near-real-time session summaries: idle sessions get their memory within minutes."""

    idle_minutes: float = Field(30.0, gt=0)
    window_hours: float = Field(26.0, gt=0, description="how far back idle sessions are sought")
    min_user_messages: int = Field(1, ge=0, description="short sessions are kept by default")


class TidySettings(BaseModel):
    """The weekly tidy (seed 004): the long-term MEMORY.md and its hard caps."""

    max_lines: int = Field(80, ge=5, le=10_000)
    max_bytes: int = Field(5 * 1024, ge=256, le=10_000_000)
    days: int = Field(7, ge=1, le=60, description="daily logs consolidated per run")


class AgingSettings(BaseModel):
    """Salience decay, compression, cold archive and (opt-in) deletion (seeds 001-003)."""

    half_life_days: float = Field(30.0, gt=0)
    salience_epsilon: float = Field(0.01, ge=0, description="smaller changes are not written")
    decay_batch: int = Field(50_000, ge=100)
    compress_after_days: float = Field(90.0, gt=0)
    archive_after_days: float = Field(365.0, gt=0)
    delete_after_days: float = Field(730.0, gt=0)
    deletion_enabled: bool = False
    archive_url: str | None = Field(
        None, description="fsspec URL of the cold Parquet tier; default <data_dir>/archive"
    )
    archive_batch: int = Field(50_000, ge=100)


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


class Settings(BaseSettings):
    """Everything configurable about Archivist, validated at start-up."""

    # hide_input_in_errors: a bad value must not echo a key or a password into a log.
    model_config = SettingsConfigDict(
        env_prefix="ARCHIVIST_",
        env_nested_delimiter="__",
        extra="ignore",
        hide_input_in_errors=True,
    )

    database_url: SecretStr | None = Field(
        None, description="SQLAlchemy URL of a PostgreSQL with pgvector; unset: embedded server"
    )
    data_dir: Path = Field(default_factory=_default_data_dir)
    embedded_keep_alive_seconds: float = Field(
        600.0,
        ge=0,
        description="the embedded server stays up this long after its last client leaves, "
        "so the next command attaches instead of starting it (storage.keeper); 0: it "
        "stops with the last process",
    )
    memory_root: str | None = Field(
        None, description="fsspec URL of the memory files; default <data_dir>/memory"
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for memory_root (JSON)"
    )
    timezone: str = "UTC"
    text_search_config: str = Field("english", pattern=r"^[a-z_]+$")
    extractor: ExtractorSettings = Field(default_factory=ExtractorSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    summaries: SummariesSettings = Field(default_factory=SummariesSettings)
    tidy: TidySettings = Field(default_factory=TidySettings)
    aging: AgingSettings = Field(default_factory=AgingSettings)
    quality: QualitySettings = Field(default_factory=QualitySettings)
    watchdog: WatchdogSettings = Field(default_factory=WatchdogSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    sync: SyncSettings = Field(default_factory=SyncSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    serving: ServingSettings = Field(default_factory=ServingSettings)
    redaction: RedactionSettings = Field(default_factory=RedactionSettings)
    documents: DocumentSettings = Field(default_factory=DocumentSettings)
    prefect: PrefectSettings = Field(default_factory=PrefectSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then environment, then the TOML policy file in ARCHIVIST_POLICY_FILE."""
        sources = [init_settings, env_settings, dotenv_settings, file_secret_settings]
        policy = os.environ.get("ARCHIVIST_POLICY_FILE")
        if policy:
            if not Path(policy).is_file():
                raise ConfigurationError(f"ARCHIVIST_POLICY_FILE {policy!r} is not a readable file")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=policy))
        return tuple(sources)

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}; use an IANA name") from exc
        return value

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def memory_root_url(self) -> str:
        return self.memory_root or str(self.data_dir / "memory")

    @property
    def reports_dir(self) -> Path:
        return self.quality.reports_dir or self.data_dir / "reports"

    @property
    def archive_url(self) -> str:
        return self.aging.archive_url or str(self.data_dir / "archive")

    @property
    def pgdata_dir(self) -> Path:
        return self.data_dir / "pgdata"
