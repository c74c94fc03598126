"""Build the extractor the settings name."""

from __future__ import annotations

import httpx

from storage.embedding import Embedder, make_embedder
from storage.kernel.errors import ConfigurationError
from storage.kernel.http_json import Connection
from storage.kernel.settings import EmbeddingSettings, ExtractorSettings, Settings
from storage.redaction import RedactionPolicy
from tasks.extraction._command import CommandExtractor
from tasks.extraction._heuristic import HeuristicExtractor
from tasks.extraction._llm import LLMExtractor
from tasks.extraction._none import NoneExtractor
from tasks.extraction._types import Extractor


def summary_embedder(settings: EmbeddingSettings) -> Embedder:
    """The vectors the offline summary ranks a session's sentences by: the configured model
    when it runs on this machine, the local one in place of a remote one (no sentence is
    sent out or paid for), never through the vector cache (a sentence is not a memory, and
    nothing of it may outlive an erasure in ``embedding_cache``)."""
    if settings.provider == "openai":
        settings = EmbeddingSettings(
            provider="local",
            threads=settings.threads,
            batch_size=settings.batch_size,
            graph_cache_dir=settings.graph_cache_dir,
        )
    return make_embedder(settings)  # no engine: no cache


def make_extractor(settings: Settings, client: httpx.Client | None = None) -> Extractor:
    """The extractor of ``settings.extractor.mode``; ``client`` serves the llm mode. The
    heuristic one (also the others' fallback) summarises with ``summary_embedder``."""
    config = settings.extractor
    redaction = RedactionPolicy.from_settings(settings.redaction)
    heuristic = HeuristicExtractor(summary_embedder(settings.embedding), settings.tz)
    if config.mode == "llm":
        return _llm(config, client, redaction, heuristic)
    if config.mode == "command":
        if not config.command:
            raise ConfigurationError("the command extractor needs ARCHIVIST_EXTRACTOR__COMMAND")
        return CommandExtractor(
            config.command,
            timeout=config.timeout_seconds,
            max_input_chars=config.max_input_chars,
            fallback=heuristic,
            redaction=redaction,
        )
    if config.mode == "none":
        return NoneExtractor()
    return heuristic


def _llm(
    config: ExtractorSettings,
    client: httpx.Client | None,
    redaction: RedactionPolicy,
    fallback: Extractor,
) -> LLMExtractor:
    if not (config.base_url and config.model):
        raise ConfigurationError(
            "the llm extractor needs ARCHIVIST_EXTRACTOR__BASE_URL and ARCHIVIST_EXTRACTOR__MODEL"
        )
    key = config.api_key.get_secret_value() if config.api_key is not None else None
    connection = Connection(
        api_key=key,
        timeout=config.timeout_seconds,
        max_retries=config.max_retries,
        backoff_seconds=(1, 2, 4, 8),
        client=client,
    )
    return LLMExtractor(
        config.base_url,
        config.model,
        connection=connection,
        max_input_chars=config.max_input_chars,
        fallback=fallback,
        redaction=redaction,
    )
