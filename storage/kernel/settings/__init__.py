"""The one `Settings` object: built once at an entry point and passed down; its sections
live in modules by role (the models, the pipeline, serving).

Environment variables use the prefix ``ARCHIVIST_`` and ``__`` for nested fields, for
example ``ARCHIVIST_EMBEDDING__DIM=384`` or ``ARCHIVIST_SYNC__WINDOW_HOURS=26``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from storage.kernel.errors import ConfigurationError
from storage.kernel.settings._models import EmbeddingSettings, ExtractorSettings, RedactionSettings
from storage.kernel.settings._pipeline import (
    AgingSettings,
    DocumentSettings,
    PipelineSettings,
    PrefectSettings,
    QualitySettings,
    QueueSettings,
    SummariesSettings,
    SyncSettings,
    TidySettings,
    WatchdogSettings,
)
from storage.kernel.settings._serving import RetrievalSettings, ServingSettings

__all__ = [
    "AgingSettings",
    "DocumentSettings",
    "EmbeddingSettings",
    "ExtractorSettings",
    "PipelineSettings",
    "PrefectSettings",
    "QualitySettings",
    "QueueSettings",
    "RedactionSettings",
    "RetrievalSettings",
    "ServingSettings",
    "Settings",
    "SummariesSettings",
    "SyncSettings",
    "TidySettings",
    "WatchdogSettings",
]


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "archivist"


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
        None,
        description="SQLAlchemy URL of a PostgreSQL with pgvector that logs in as the owner of "
        "the schema, e.g. postgresql://user:pass@host/db: archivist db, keys, index and "
        "reembed use it, and the pipeline too unless ARCHIVIST_PIPELINE__DATABASE_URL is "
        "set; unset: the embedded server",
    )
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="the embedded server's data (pgdata/), the demo's transcripts, and the default "
        "parent of memory/, archive/ and reports/; default $XDG_DATA_HOME/archivist or "
        "~/.local/share/archivist",
    )
    embedded_keep_alive_seconds: float = Field(
        600.0,
        ge=0,
        description="the embedded server stays up this long after its last client leaves, "
        "so the next command attaches instead of starting it (storage.server.keeper); 0: it "
        "stops with the last process",
    )
    memory_root: str | None = Field(
        None, description="fsspec URL of the memory files; default <data_dir>/memory"
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="fsspec options (JSON) for every URL Archivist reads or writes: the memory "
        "root, the archive, transcripts, documents and exports (e.g. an S3 endpoint or key)",
    )
    timezone: str = Field(
        "UTC",
        description="IANA time zone of the memory files' dates, the schedules, named time "
        "ranges and --as-of times written without an offset",
    )
    text_search_config: str = Field(
        "english",
        pattern=r"^[a-z_]+$",
        description="PostgreSQL text-search configuration of the full-text columns; fixed when "
        "archivist db upgrade creates the schema",
    )
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
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
