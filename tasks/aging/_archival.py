"""Archival to the cold tier (taking rows back out of it is ``_take_out``).

Each file goes through three steps, each its own transaction, so an interruption at any
point loses and duplicates nothing:

1. ``write_part``: write the Parquet file, then record it (manifest ``written``);
2. ``verify_part``: read it back (the bytes as written, row count), manifest ``verified``;
3. ``commit_part``: delete its rows from ``memories``, index them in
   ``archived_memories``, mark the manifest ``committed`` and queue the file's line of
   the namespace's ``timeline.jsonl`` (``storage.blocks``), in one transaction.

In a local folder, step 1 flushes the file to disk with its name before it returns, so a
crash of the machine, not only of the process, loses nothing either.

A row leaves the hot table only as its file holds it: if a search counted an access, or
the row was pinned or deleted, since the fetch, the file is dropped and its rows stay for
the next run. A re-run first finishes what an earlier run left: an uncommitted manifest
whose file verifies is committed (the same check, with the rows read from the file); one
whose file is missing, differs, or whose rows changed meanwhile is dropped with its file,
and those rows are archived anew.
A file written but never recorded has a deterministic name, so the re-run overwrites it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from queue import Empty, SimpleQueue

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive, blocks
from storage.archive import (
    EARLIEST,
    ManifestEntry,
    MemoryReader,
    Page,
    VectorBuffer,
    fetch_memories,
)
from storage.kernel.shards import Scope, Shard
from storage.operations.access import fold_accesses
from tasks.aging._bulk_memory import bulk_memory
from tasks.aging._cold_store import ColdStore, Scratch, memories_part
from tasks.aging._timeline import archive_block

# Namespaces are independent, so two run at once: one's rows are read or deleted by
# PostgreSQL while the other's Parquet is encoded and hashed (both release the GIL). Each
# worker takes the next namespace from a queue when it is done with one.
ARCHIVE_WORKERS = 2


@dataclass
class ArchiveOutcome:
    """What one archival pass did (a dry run fills ``candidates`` only)."""

    candidates: int = 0
    rows_archived: int = 0
    files: int = 0
    recovered: int = 0
    discarded: int = 0
    leftovers_dropped: int = 0


def write_part(
    engine: Engine, cold: ColdStore, table: pa.Table, scratch: Scratch | None = None
) -> ManifestEntry:
    """Step 1: one partition's rows (one namespace and year) to Parquet, manifest 'written'."""
    ids = table.column("id")
    namespace = str(table.column("namespace")[0])
    year = int(pc.year(table.column("occurred_at")[0]).as_py())
    min_id, max_id = int(pc.min(ids).as_py()), int(pc.max(ids).as_py())
    part = memories_part(namespace, year, min_id, max_id, rewrite=False)
    written = cold.write(part, table, scratch)
    entry = {
        "kind": archive.MEMORIES,
        "namespace": namespace,
        "year": year,
        "uri": written.uri,
        "row_count": written.rows,
        "checksum": written.checksum,
        "min_id": min_id,
        "max_id": max_id,
        "session_id": None,
        "last_at": pc.max(table.column("occurred_at")).as_py(),
        "status": "written",
    }
    with Session(engine) as session, session.begin():
        archive.relax_commit(session)
        recorded = archive.upsert_manifest(session, entry)
    if recorded is None:  # cannot happen for hot rows: their ids are in no committed file
        raise RuntimeError(f"{written.uri} is already committed")
    return recorded


def verify_part(
    engine: Engine, cold: ColdStore, entry: ManifestEntry, scratch: Scratch | None = None
) -> bool:
    """Step 2: read the file back (compared with the bytes ``scratch`` just wrote, if
    given; else by its checksum); mark the manifest 'verified' if it matches."""
    if not cold.verify(entry.uri, entry.row_count, entry.checksum, scratch):
        return False
    with Session(engine) as session, session.begin():
        archive.relax_commit(session)
        archive.set_status(session, [entry.id], "verified")
    return True


# What commit compares with the hot rows: what a search or a pin changes meanwhile.
VERSION_COLUMNS = ["id", "access_count", "last_accessed_at"]


def commit_part(engine: Engine, entry: ManifestEntry, rows: pa.Table, as_of: datetime) -> int:
    """Step 3: the rows leave the hot table and the file's timeline line is queued; 0
    (nothing changed) if some vanished, were pinned or were touched by a search meanwhile."""
    with Session(engine) as session:
        archive.relax_commit(session)
        moved = archive.commit_memories(session, entry.id, rows.select(VERSION_COLUMNS))
        if moved != entry.row_count:
            session.rollback()
            return 0
        blocks.add_blocks(session, [archive_block(entry, moved, as_of)])
        session.commit()
    return moved


def _discard(engine: Engine, cold: ColdStore, entry: ManifestEntry) -> None:
    cold.remove(entry.uri)
    with Session(engine) as session, session.begin():
        archive.delete_manifests(session, [entry.id])


def recover(
    engine: Engine,
    cold: ColdStore,
    outcome: ArchiveOutcome,
    as_of: datetime,
    namespace: str | None = None,
    shard: Shard | None = None,
) -> None:
    """Finish or undo what an interrupted run left: uncommitted manifests (of the
    namespace and shard, so never a file another shard's run is still writing)."""
    with Session(engine) as session:
        pending = archive.manifests(
            session,
            namespace=namespace,
            shard=shard,
            kind=archive.MEMORIES,
            statuses=["written", "verified"],
        )
    for entry in pending:
        if verify_part(engine, cold, entry):
            moved = commit_part(engine, entry, cold.read(entry.uri, VERSION_COLUMNS), as_of)
            if moved:
                outcome.recovered += 1
                outcome.rows_archived += moved
                continue
        _discard(engine, cold, entry)
        outcome.discarded += 1


def by_year(table: pa.Table) -> list[pa.Table]:
    """A batch of memories split into one table per UTC year of ``occurred_at``, in order.

    Years in runs (as archival fetches them, or as ids follow time) are zero-copy slices;
    otherwise each year's rows are filtered out."""
    if table.num_rows == 0:
        return []
    years = pc.year(table.column("occurred_at")).to_numpy()
    starts = np.flatnonzero(np.diff(years)) + 1
    bounds = [0, *starts.tolist(), len(years)]
    if len(set(years[bounds[:-1]].tolist())) == len(bounds) - 1:  # one run per year
        runs = sorted(zip(years[bounds[:-1]].tolist(), bounds, bounds[1:], strict=False))
        return [table.slice(lo, hi - lo) for _, lo, hi in runs]
    return [table.filter(pa.array(years == year)) for year in np.unique(years).tolist()]


@dataclass
class WorkerOutcome:
    found: int = 0
    archived: int = 0
    files: int = 0


@dataclass
class Worker:
    """What one archival worker keeps from one namespace to the next: its connection for
    reads, and its memory for vectors and Parquet (memory the kernel maps afresh is zeroed
    first; at 50 to 100 MB a batch, that was a good part of archival's time)."""

    reader: MemoryReader
    scratch: Scratch = field(default_factory=Scratch)
    vectors: VectorBuffer = field(default_factory=VectorBuffer)
    outcome: WorkerOutcome = field(default_factory=WorkerOutcome)


# Archival reads a namespace's old memories in id order (one pass over their pages; a pass
# per year would read most pages once per year they hold); each batch comes sorted by year,
# so its files are slices of it.
def archive_namespace(
    engine: Engine,
    cold: ColdStore,
    worker: Worker,
    namespace: str,
    window: tuple[datetime, datetime],
    batch: int,
) -> None:
    """Archive a namespace's memories older than ``cutoff``: ``batch`` rows per read, one
    file per year in each read; ``worker.outcome`` counts them. ``window`` is (cutoff,
    as_of)."""
    cutoff, as_of = window
    after, out = 0, worker.outcome
    while True:
        table = fetch_memories(
            worker.reader,
            namespace,
            (EARLIEST, cutoff),
            Page(after, batch),
            year_first=True,
            vectors=worker.vectors,
        )
        if table.num_rows == 0:
            return
        out.found += table.num_rows
        after = int(pc.max(table.column("id")).as_py())
        for part in by_year(table):
            entry = write_part(engine, cold, part, worker.scratch)
            verified = verify_part(engine, cold, entry, worker.scratch)
            moved = commit_part(engine, entry, part, as_of) if verified else 0
            if moved:
                out.archived += moved
                out.files += 1
            else:  # stale or unreadable: its rows stay hot for the next run
                _discard(engine, cold, entry)
        if table.num_rows < batch:  # the namespace is done; another query would only say so
            return


def _archive_from(
    engine: Engine,
    cold: ColdStore,
    todo: SimpleQueue[str],
    window: tuple[datetime, datetime],
    batch: int,
) -> WorkerOutcome:
    """One worker: namespaces from ``todo`` until it is empty."""
    with MemoryReader(engine) as reader:
        worker = Worker(reader)
        while True:
            try:
                namespace = todo.get_nowait()
            except Empty:
                return worker.outcome
            archive_namespace(engine, cold, worker, namespace, window, batch)


def archive_old(
    engine: Engine,
    cold: ColdStore,
    cutoff: datetime,
    batch: int,
    scope: Scope,
    *,
    as_of: datetime | None = None,
) -> ArchiveOutcome:
    """Move unpinned memories (of the scope's namespace or shard) that happened before
    ``cutoff`` to the cold tier, ``batch`` rows per read; each file's timeline line says
    ``as_of`` (default: now).

    ``candidates`` is what a dry run counts, and what a real run found to archive."""
    namespace, shard, dry_run = scope.namespace, scope.shard, scope.dry_run
    window = (cutoff, as_of or datetime.now(UTC))
    outcome = ArchiveOutcome()
    with Session(engine) as session:
        if dry_run:
            outcome.candidates = archive.count_archivable(session, cutoff, namespace, shard)
            return outcome
        namespaces = archive.namespaces_older_than(session, cutoff, namespace, shard)
    recover(engine, cold, outcome, window[1], namespace, shard)
    with Session(engine) as session, session.begin():
        fold_accesses(session, namespace, shard)  # a row with pending accesses cannot leave
        outcome.leftovers_dropped = archive.drop_archived_leftovers(session, namespace, shard)
    todo: SimpleQueue[str] = SimpleQueue()
    for name in namespaces:
        todo.put(name)
    workers = min(ARCHIVE_WORKERS, len(namespaces))
    with bulk_memory(), ThreadPoolExecutor(workers or 1) as pool:  # the pool ends first
        running = [
            pool.submit(_archive_from, engine, cold, todo, window, batch) for _ in range(workers)
        ]
        for done in running:
            part = done.result()
            outcome.candidates += part.found
            outcome.rows_archived += part.archived
            outcome.files += part.files
    return outcome
