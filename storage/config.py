"""The one `Settings` object: built once at an entry point and passed down.

Environment variables use the prefix ``ARCHIVIST_`` and ``__`` for nested fields, for
example ``ARCHIVIST_EMBEDDING__DIM=384`` or ``ARCHIVIST_SYNC__WINDOW_HOURS=26``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "archivist"


class EmbeddingSettings(BaseModel):
    """Which embedder turns text into vectors, and the vector size the schema stores."""

    provider: Literal["hashing"] = "hashing"
    dim: int = Field(384, ge=8, le=4096)


class SyncSettings(BaseModel):
    """Defaults of the daily sync; flow parameters override them per run."""

    window_hours: float = Field(26.0, gt=0)
    min_user_messages: int = Field(2, ge=0)
    batch_size: int = Field(500, ge=1, le=10_000)


class Settings(BaseSettings):
    """Everything configurable about Archivist, validated at start-up."""

    model_config = SettingsConfigDict(
        env_prefix="ARCHIVIST_", env_nested_delimiter="__", extra="ignore"
    )

    database_url: SecretStr | None = Field(
        None, description="SQLAlchemy URL of a PostgreSQL with pgvector; unset: embedded server"
    )
    data_dir: Path = Field(default_factory=_default_data_dir)
    memory_root: str | None = Field(
        None, description="fsspec URL of the memory files; default <data_dir>/memory"
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for memory_root (JSON)"
    )
    timezone: str = "UTC"
    text_search_config: str = Field("english", pattern=r"^[a-z_]+$")
    extractor: Literal["heuristic"] = "heuristic"
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    sync: SyncSettings = Field(default_factory=SyncSettings)

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
    def pgdata_dir(self) -> Path:
        return self.data_dir / "pgdata"
