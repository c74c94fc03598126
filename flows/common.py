"""What every flow shares: its parameters' helpers and the deployments' tag."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.kernel.errors import InputError
from storage.kernel.inputs import check_instant
from storage.kernel.settings import Settings
from storage.kernel.shards import Shard

TAG = "archivist"  # every deployment carries it; the watchdog watches what has it


def resolve_as_of(as_of: datetime | None, settings: Settings) -> datetime:
    """Now when unset; a naive time is read in the configured time zone. A time outside
    what every part of the stack reads (``storage.kernel.inputs.check_instant``) is refused."""
    if as_of is None:
        return datetime.now(UTC)
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=settings.tz)
    try:
        return check_instant(as_of)
    except ValueError as exc:
        raise InputError(f"as_of {as_of.isoformat()} {exc}") from None


def resolve_shard(shard: str | None) -> Shard | None:
    """None (every namespace) when unset; ``"2/4"`` as its shard, or a clear error."""
    return None if shard is None or not shard.strip() else Shard.parse(shard)
