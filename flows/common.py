"""What every flow shares: its parameters' helpers and the deployments' tag."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.config import Settings
from storage.shards import Shard

TAG = "archivist"  # every deployment carries it; the watchdog watches what has it


def resolve_as_of(as_of: datetime | None, settings: Settings) -> datetime:
    """Now when unset; a naive time is read in the configured time zone."""
    if as_of is None:
        return datetime.now(UTC)
    if as_of.tzinfo is None:
        return as_of.replace(tzinfo=settings.tz)
    return as_of


def resolve_shard(shard: str | None) -> Shard | None:
    """None (every namespace) when unset; ``"2/4"`` as its shard, or a clear error."""
    return None if shard is None or not shard.strip() else Shard.parse(shard)
