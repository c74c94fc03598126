"""Settings of the models Archivist calls: the embedder, the extractor, and the redaction
of what is sent to them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

_CUSTOM_RULE = re.compile(r"^([A-Z][A-Z0-9_]{0,29})=(.+)$", re.DOTALL)


class EmbeddingSettings(BaseModel):
    """Which embedder turns text into vectors, and the vector size the schema stores."""

    # Validation errors would otherwise echo the raw input, API key included.
    model_config = ConfigDict(hide_input_in_errors=True)

    provider: Literal["local", "hashing", "openai"] = Field(
        "local",
        description="local: all-MiniLM-L6-v2 here; hashing: no model; openai: an endpoint",
    )
    dim: int = Field(
        384,
        ge=8,
        le=4096,
        description="vector size, fixed at archivist db upgrade (local makes 384); change it "
        "with archivist reembed",
    )
    threads: int | None = Field(
        None,
        ge=1,
        le=64,
        description="batches the local embedder runs side by side, one CPU thread each "
        "(default: one per CPU; a query takes one)",
    )
    store_encoder: Literal["auto", "int8-static", "int8", "float32"] = Field(
        "auto",
        description="the local model's graph for the stored vectors (memories, document "
        "chunks): int8-static (int8 weights and activations with fixed scales, texts in "
        "batches), int8 (activations scaled per text, one text per run) or float32; auto: "
        "the graph of the vectors the store holds, int8-static for a new store. The store "
        "records which; archivist reembed moves it",
    )
    query_encoder: Literal["int8", "int8-static", "float32"] = Field(
        "int8",
        description="the local model's graph for search queries: int8 (2.5 times cheaper, "
        "mean cosine 0.99 with float32's), int8-static or float32",
    )
    turn_context: bool = Field(
        False,
        description="embed each turn followed by its session's title, its date and the start "
        "of the turn it answers (the stored text stays the message; turns written from then "
        "on, and every turn after `archivist reembed`). Off by default: the oldest evidence "
        "and German questions lose recall, and embedding CPU per memory doubles "
        "(docs/concepts/ranking.md)",
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible API root, e.g. http://localhost:11434/v1"
    )
    model: str | None = Field(None, description="model name sent to the /embeddings endpoint")
    api_key: SecretStr | None = Field(None, description="API key of the openai provider")
    batch_size: int = Field(64, ge=1, le=2048, description="texts per request (openai)")
    batch_tokens: int = Field(
        512,
        ge=256,
        le=65_536,
        description="padded tokens per batch of the local model (texts sorted by length)",
    )
    graph_cache_dir: Path | None = Field(
        None,
        description="where the local model's built graph is kept between processes; "
        "default $XDG_CACHE_HOME/archivist or ~/.cache/archivist",
    )
    timeout_seconds: float = Field(30.0, gt=0, description="timeout of one openai request")
    max_retries: int = Field(
        3,
        ge=0,
        le=10,
        description="openai retries on timeouts, 429 and 5xx (backoff 0.5, 1, 2, 4, 8 s)",
    )
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


class ExtractorSettings(BaseModel):
    """Which extractor turns a session state into an episode and memories (seed 001)."""

    model_config = ConfigDict(hide_input_in_errors=True)

    mode: Literal["heuristic", "llm", "command", "none"] = Field(
        "heuristic",
        description="heuristic: offline rules; llm: an OpenAI-compatible /chat/completions "
        "endpoint; command: a local program; none: no model, turns only",
    )
    base_url: str | None = Field(None, description="OpenAI-compatible API root, for llm")
    model: str | None = Field(None, description="chat model name, for llm")
    api_key: SecretStr | None = Field(None, description="API key of the llm endpoint")
    timeout_seconds: float = Field(
        60.0, gt=0, description="timeout of one llm request or one command run"
    )
    max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="llm retries (backoff 1, 2, 4, 8 s) before falling back to the heuristic",
    )
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


class RedactionSettings(BaseModel):
    """PII redaction of the text that leaves the machine (and, optionally, what is stored)."""

    # hide_input_in_errors: a custom pattern may quote the very values it is meant to hide.
    model_config = ConfigDict(hide_input_in_errors=True)

    enabled: bool = Field(True, description="redact text sent to the llm, embedder and webhook")
    emails: bool = Field(True, description="email addresses")
    phones: bool = Field(True, description="phone numbers valid in their country's plan")
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
        False,
        description="also redact transcripts and queued memories and messages before they "
        "are stored (documents are stored as given, as archivist docs ingest stores them)",
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
