"""Ageing as plain functions: salience decay, opt-in deletion, the access log's window, and
the run report.

Compression lives in ``_compression`` and archival in ``_archival``; the flow
``memory-aging`` calls them in the order decay, compress, archive, delete, access log.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive
from storage.kernel.settings import AgingSettings
from storage.kernel.shards import Scope
from storage.operations import access, aging
from storage.operations.access import LogWindow
from storage.operations.aging import DecayParams
from tasks.aging._archival import ArchiveOutcome
from tasks.aging._cold_store import ColdStore
from tasks.aging._compression import CompressOutcome
from tasks.aging._take_out import take_out_all
from tasks.common import readable


@dataclass
class DecayOutcome:
    """Rows looked at and rows whose salience moved by more than epsilon (written)."""

    memories_seen: int = 0
    memories_written: int = 0
    episodes_seen: int = 0
    episodes_written: int = 0
    batches: int = 0


@dataclass
class DeleteOutcome:
    """What deletion removed; nothing unless ``deletion_enabled``."""

    enabled: bool = False
    hot_rows: int = 0
    archived_rows: int = 0
    sessions: int = 0
    transcripts: int = 0


@dataclass
class AccessLogOutcome:
    """Access-log rows past the window, counted by day and deleted (a dry run: found)."""

    rows: int = 0
    days: int = 0
    batches: int = 0


@dataclass(frozen=True)
class Cutoffs:
    compress: datetime
    archive: datetime
    delete: datetime
    access_log: datetime


def cutoffs(as_of: datetime, policy: AgingSettings) -> Cutoffs:
    """The moments before which a memory is compressed, archived and deleted, and an access
    is no longer logged one by one."""
    return Cutoffs(
        compress=as_of - timedelta(days=policy.compress_after_days),
        archive=as_of - timedelta(days=policy.archive_after_days),
        delete=as_of - timedelta(days=policy.delete_after_days),
        access_log=as_of - timedelta(days=policy.access_log_days),
    )


def prune_access_log(
    engine: Engine, window: LogWindow, batch: int, *, dry_run: bool = False
) -> AccessLogOutcome:
    """Move the access-log rows past ``window`` into the daily counts, one committed batch
    at a time (a re-run finds nothing left: each row is counted once)."""
    out = AccessLogOutcome()
    if dry_run:
        with Session(engine) as session:
            out.rows = access.old_access_rows(session, window)
        return out
    while True:
        with Session(engine) as session, session.begin():
            pruned = access.prune_access_log(session, window, batch)
        if pruned.rows == 0:
            return out
        out.rows, out.days, out.batches = (
            out.rows + pruned.rows,
            out.days + pruned.days,
            out.batches + 1,
        )


def decay(engine: Engine, params: DecayParams, batch: int = 50_000) -> DecayOutcome:
    """Seed 003's salience for memories, then episodes: one statement per id batch."""
    out = DecayOutcome()
    for episodes in (False, True):
        with Session(engine) as session:
            scope = params.scope
            ids = aging.id_range(session, scope.namespace, shard=scope.shard, episodes=episodes)
        for lo in range(ids.start, ids.stop, batch):
            with Session(engine) as session, session.begin():
                seen, written = aging.decay_batch(
                    session, params, lo, lo + batch, episodes=episodes
                )
            out.batches += 1
            if episodes:
                out.episodes_seen += seen
                out.episodes_written += written
            else:
                out.memories_seen += seen
                out.memories_written += written
    return out


def delete_old(
    engine: Engine, cold: ColdStore, cutoff: datetime, scope: Scope, *, enabled: bool
) -> DeleteOutcome:
    """Past ``cutoff``: archived rows (files rewritten), transcripts, hot rows, sessions
    (of the scope's namespace or shard)."""
    if not enabled:
        return DeleteOutcome()
    namespace, shard, dry_run = scope.namespace, scope.shard, scope.dry_run
    out = DeleteOutcome(enabled=True)
    with Session(engine) as session:
        grouped = archive.old_archived(session, cutoff, namespace, shard)
        transcripts = archive.old_transcripts(session, cutoff, namespace, shard)
    if dry_run:
        with Session(engine) as session:
            out.hot_rows, _ = aging.delete_expired(
                session, cutoff, namespace, dry_run=True, shard=shard
            )
        out.archived_rows = sum(len(ids) for ids in grouped.values())
        out.transcripts = len(transcripts)
        return out
    out.archived_rows = take_out_all(engine, cold, grouped, None)
    for entry in transcripts:
        with Session(engine) as session, session.begin():
            archive.delete_manifests(session, [entry.id])
        cold.remove(entry.uri)
        out.transcripts += 1
    with Session(engine) as session, session.begin():
        out.hot_rows, out.sessions = aging.delete_expired(
            session, cutoff, namespace, dry_run=False, shard=shard
        )
    return out


# The run's steps, in the order ``memory-aging`` runs them.
STEPS = ("decay", "compression", "archival", "deletion", "access_log")


@dataclass
class AgingReport:
    """What one ``memory-aging`` run did, step by step (a dry run: what it would do)."""

    as_of: str
    namespace: str | None  # the namespace parameter's pseudonym (storage.pseudonyms)
    dry_run: bool
    shard: str | None = None  # "2/4": the namespaces of shard 2 of a split in 4
    decay: DecayOutcome = field(default_factory=DecayOutcome)
    compression: CompressOutcome = field(default_factory=CompressOutcome)
    archival: ArchiveOutcome = field(default_factory=ArchiveOutcome)
    deletion: DeleteOutcome = field(default_factory=DeleteOutcome)
    access_log: AccessLogOutcome = field(default_factory=AccessLogOutcome)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        lines = [
            f"# memory-aging as of {readable(self.as_of)}",
            f"namespace: {self.namespace or 'all'} · shard: {self.shard or 'all'} · "
            f"dry run: {'yes' if self.dry_run else 'no'}",
            "",
            "| step | counts | seconds |",
            "| --- | --- | --- |",
        ]
        for step in STEPS:
            counts = ", ".join(f"{k} {v}" for k, v in asdict(getattr(self, step)).items())
            lines.append(f"| {step} | {counts} | {self.seconds.get(step, 0.0):.2f} |")
        return "\n".join(lines) + "\n"
