"""Compression: old sessions keep their summary; their raw text moves to the cold tier.

For each batch of sessions whose conversation ended before the cutoff (and is summarised,
and holds nothing pinned): first every session's raw messages are written to
``transcripts/namespace=NS/year=YYYY/<session>.parquet`` and read back (checksum and row
count) and recorded as ``verified``; only then one transaction folds the session's
``turn`` memories into its episode memory (access counts summed), flags that memory
``compressed`` (re-embedded if its text no longer equals the episode summary), deletes
the raw messages and marks the transcripts ``committed``. A crash before that
transaction leaves the messages in place, and the re-run writes the same files again.
Facts, preferences, decisions and task cards are already distilled; they stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive
from storage.embedding import Embedder
from storage.episodes import episode_text
from storage.kernel.shards import Scope
from storage.operations import aging
from storage.operations.aging import CompressCandidate
from tasks.aging._cold_store import ColdStore, transcript_part

_TS = pa.timestamp("us", tz="UTC")
TRANSCRIPT_SCHEMA = pa.schema(
    [
        ("session_id", pa.string()),
        ("namespace", pa.string()),
        ("id", pa.string()),
        ("role", pa.string()),
        ("speaker", pa.string()),
        ("content", pa.string()),
        ("ts", _TS),
    ]
)


@dataclass
class CompressOutcome:
    """Sessions compressed, and what went: turn memories folded, messages moved to cold."""

    sessions: int = 0
    turns_folded: int = 0
    messages_archived: int = 0
    messages_deleted: int = 0
    resummarised: int = 0


def _transcript(c: CompressCandidate, rows: Sequence[object]) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    return pa.Table.from_arrays(
        [
            pa.array([c.session_id] * len(rows), pa.string()),
            pa.array([c.namespace] * len(rows), pa.string()),
            *(pa.array(columns[i], pa.string()) for i in (1, 2, 3, 4)),
            pa.array(columns[5], _TS),
        ],
        schema=TRANSCRIPT_SCHEMA,
    )


def _relative(session: Session, c: CompressCandidate) -> str:
    year = c.last_at.astimezone(UTC).year
    earlier = archive.transcripts_of(session, [c.session_id])
    if any(e.status == "committed" for e in earlier):  # new messages after a compression
        return transcript_part(c.namespace, year, f"{c.session_id}@{c.last_at:%Y%m%dT%H%M%S}")
    return transcript_part(c.namespace, year, c.session_id)


def write_transcripts(
    engine: Engine, cold: ColdStore, batch: Sequence[CompressCandidate]
) -> list[int]:
    """Raw messages of each session to Parquet, verified; returns the manifest ids."""
    with Session(engine) as session:
        messages = aging.session_messages(session, [c.session_id for c in batch])
        names = {c.session_id: _relative(session, c) for c in batch}
    by_session: dict[str, list[object]] = {c.session_id: [] for c in batch}
    for row in messages:
        by_session[row.session_id].append(tuple(row))
    files = [(names[c.session_id], _transcript(c, by_session[c.session_id])) for c in batch]
    ids = []
    for c, written in zip(batch, cold.write_all_verified(files), strict=True):
        entry = {
            "kind": archive.TRANSCRIPT,
            "namespace": c.namespace,
            "year": c.last_at.astimezone(UTC).year,
            "uri": written.uri,
            "row_count": written.rows,
            "checksum": written.checksum,
            "min_id": None,
            "max_id": None,
            "session_id": c.session_id,
            "last_at": c.last_at,
            "status": "verified",
        }
        with Session(engine) as session, session.begin():
            recorded = archive.upsert_manifest(session, entry)
        if recorded is not None:
            ids.append(recorded.id)
    return ids


def _new_summaries(
    engine: Engine, embedder: Embedder, batch: Sequence[CompressCandidate]
) -> list[tuple[int, str, str]]:
    """(memory id, summary, vector) for episode memories whose text is not the summary."""
    with Session(engine) as session:
        texts = aging.memory_texts(session, [c.episode_memory_id for c in batch])
    wanted = {c.episode_memory_id: episode_text(c.title, c.summary) for c in batch}
    stale = [c for c in batch if texts.get(c.episode_memory_id) != wanted[c.episode_memory_id]]
    if not stale:
        return []
    vectors = embedder.embed([wanted[c.episode_memory_id] for c in stale])
    return [
        (c.episode_memory_id, wanted[c.episode_memory_id], _literal(v))
        for c, v in zip(stale, vectors, strict=True)
    ]


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def compress_batch(
    engine: Engine, cold: ColdStore, embedder: Embedder, batch: Sequence[CompressCandidate]
) -> CompressOutcome:
    """Transcripts first (verified), then one transaction folds and deletes."""
    manifest_ids = write_transcripts(engine, cold, batch)
    changed = _new_summaries(engine, embedder, batch)
    with Session(engine) as session, session.begin():
        aging.resummarise(session, changed)
        folded, deleted = aging.fold_sessions(session, batch)
        archive.set_status(session, manifest_ids, "committed")
    return CompressOutcome(
        sessions=len(batch),
        turns_folded=folded,
        messages_archived=sum(c.messages for c in batch),
        messages_deleted=deleted,
        resummarised=len(changed),
    )


def compress_old(
    engine: Engine,
    cold: ColdStore,
    embedder: Embedder,
    cutoff: datetime,
    batch_size: int,
    scope: Scope,
) -> CompressOutcome:
    """Compress every session (of the scope's namespace or shard) that ended before the
    cutoff, ``batch_size`` at a time."""
    total = CompressOutcome()
    with Session(engine) as session:
        ready = aging.compressible(session, cutoff, scope.namespace, scope.shard)
    for first in range(0, len(ready), batch_size):
        batch = ready[first : first + batch_size]
        if scope.dry_run:
            with Session(engine) as session:
                turns = aging.count_turns(session, [c.session_id for c in batch])
            done = CompressOutcome(len(batch), turns, sum(c.messages for c in batch))
        else:
            done = compress_batch(engine, cold, embedder, batch)
        for name in total.__dataclass_fields__:
            setattr(total, name, getattr(total, name) + getattr(done, name))
    return total
