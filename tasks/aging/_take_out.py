"""Taking rows back out of the cold tier (restore, purge, deletion): each file that holds
some of them is rewritten without them (or dropped when nothing is left), and the index
points at the new file in the same transaction that unindexes the rows."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive
from tasks.aging._cold_store import ColdStore, memories_part

OnCommit = Callable[[Session, pa.Table], None]


def take_out(
    engine: Engine,
    cold: ColdStore,
    manifest_id: int,
    ids: list[int],
    on_commit: OnCommit | None = None,
) -> int:
    """Remove ``ids`` from one archive file: rewrite it without them (or drop it if empty),
    then, in one transaction, unindex them, repoint the manifest and run ``on_commit`` with
    the removed rows (restore puts them back). The old file goes after the commit."""
    with Session(engine) as session:
        (entry,) = archive.manifests_by_id(session, [manifest_id])
    table = cold.read(entry.uri)
    chosen = pc.is_in(table.column("id"), value_set=pa.array(ids, type=pa.int64()))
    removed, kept = table.filter(chosen), table.filter(pc.invert(chosen))
    replacement = None
    if kept.num_rows:
        min_id, max_id = int(pc.min(kept.column("id")).as_py()), int(pc.max(kept["id"]).as_py())
        part = memories_part(entry.namespace, entry.year, min_id, max_id, rewrite=True)
        written = cold.write_verified(part, kept)
        replacement = {
            "uri": written.uri,
            "row_count": written.rows,
            "checksum": written.checksum,
            "min_id": min_id,
            "max_id": max_id,
        }
    with Session(engine) as session, session.begin():
        archive.unindex(session, removed.column("id").to_pylist())
        if replacement is None:
            archive.delete_manifests(session, [entry.id])
        else:
            archive.replace_file(session, entry.id, replacement)
        if on_commit is not None:
            on_commit(session, removed)
    cold.remove(entry.uri)
    return int(removed.num_rows)


def take_out_all(
    engine: Engine, cold: ColdStore, grouped: dict[int, list[int]], on_commit: OnCommit | None
) -> int:
    """``take_out`` for every file that holds some of the ids."""
    return sum(take_out(engine, cold, mid, ids, on_commit) for mid, ids in grouped.items())
