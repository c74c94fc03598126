"""Privacy: forget a namespace, pin and unpin, restore from the archive (purge: ``_purge``).

Each action writes one ``audit_log`` row (counts and ids, never content) in the
transaction of its database change. ``forget`` first renames the namespace to its
pseudonym in the runs that recorded it as a parameter, in the store and in Prefect
(``_flow_runs``), while its key still exists (a re-run finds the same pseudonym). Then
``forget`` and ``purge_session`` scrub the store (``_scrub``): the deleted rows leave the
table files and the planner's statistics. Files go before the rows that point at them
are deleted (forget, purge), so an interruption leaves something a re-run can finish,
never a file the database no longer knows about; a repeated ``forget`` finds nothing and
says so (and scrubs again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import archive, audit
from storage.archive import insert_rows
from storage.embedding import Embedder
from storage.kernel.errors import InputError, StorageError
from storage.kernel.records import NAMESPACE
from storage.operations import privacy
from storage.operations.ann import drop_namespace_index
from storage.operations.reembed import refresh_vectors
from storage.pseudonyms import namespace_pseudonym
from tasks.aging import ColdStore, namespace_folders, take_out_all
from tasks.files import MemoryRoot
from tasks.privacy._export import export_namespace
from tasks.privacy._flow_runs import rename_in_flow_runs
from tasks.privacy._scrub import scrub


@dataclass
class ForgetOutcome:
    """What a forget erased; ``pseudonym``: what reports called the namespace, which the
    runs recorded with it as a parameter (``flow_runs`` of them in Prefect) now say."""

    namespace: str
    rows: dict[str, int] = field(default_factory=dict)
    cold_files: int = 0
    memory_files: int = 0
    exported: dict[str, int] | None = None
    vacuumed: list[str] = field(default_factory=list)
    pseudonym: str = ""
    flow_runs: int = 0


@dataclass(frozen=True)
class Export:
    """Where ``forget`` writes the namespace first: a folder or fsspec URL, and the file
    system's options."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)


def forget(
    engine: Engine,
    cold: ColdStore,
    root: MemoryRoot,
    namespace: str,
    *,
    actor: str,
    export: Export | None = None,
    full_vacuum: bool = False,
) -> ForgetOutcome:
    """Erase everything of a namespace (optionally exporting it first); one audit row."""
    if not NAMESPACE.fullmatch(namespace):
        raise InputError("bad namespace name: use lowercase letters, digits, '.', '_' or '-'")
    out = ForgetOutcome(namespace)
    if export is not None:
        out.exported = export_namespace(engine, cold, root, namespace, export.url, export.options)
    with Session(engine) as session, session.begin():  # before the key goes with the rows
        out.pseudonym = namespace_pseudonym(session, namespace)
        flow_runs = privacy.pseudonymize_runs(session, namespace, out.pseudonym)
    out.flow_runs = rename_in_flow_runs(flow_runs, namespace, out.pseudonym)
    out.cold_files = sum(cold.remove_tree(folder) for folder in namespace_folders(namespace))
    out.memory_files = _remove_memory_folder(root, namespace)
    with Session(engine) as session, session.begin():
        out.rows = privacy.forget_rows(session, namespace)
        left = privacy.remaining(session, namespace)
        if left:
            raise StorageError(
                f"forget left rows of the namespace in {sorted(left)}; add those tables to "
                "storage.operations.privacy"
            )
        details = {**out.rows, "cold_files": out.cold_files, "memory_files": out.memory_files}
        details["exported"] = export is not None
        audit.record(session, "forget", actor=actor, namespace=namespace, details=details)
    with Session(engine) as session, session.begin():  # a short lock, once the rows are gone
        drop_namespace_index(session, namespace)
    out.vacuumed = scrub(engine, out.rows, full=full_vacuum)
    return out


def _remove_memory_folder(root: MemoryRoot, namespace: str) -> int:
    path = root.path(namespace)
    if not root.fs.exists(path):
        return 0
    count = len(root.fs.find(path))
    root.fs.rm(path, recursive=True)
    return count


def restore(
    engine: Engine, cold: ColdStore, memory_id: int, embedder: Embedder, *, actor: str
) -> int:
    """Bring an archived memory back to the hot table, with its id, vector and counters.

    A row archived under another embedding model comes back re-embedded by ``embedder``.
    """
    with Session(engine) as session:
        grouped = archive.locate(session, [memory_id])
    if not grouped:
        raise InputError(f"memory {memory_id} is not in the archive")

    def put_back(session: Session, rows: pa.Table) -> None:
        insert_rows(session, refresh_vectors(rows, embedder))
        archive.relink_episodes(session, rows.column("id").to_pylist())
        namespace = str(rows.column("namespace")[0]) if rows.num_rows else None
        audit.record(
            session,
            "restore",
            actor=actor,
            namespace=namespace,
            target=f"memory:{memory_id}",
            details={"rows": rows.num_rows},
        )

    return take_out_all(engine, cold, grouped, put_back)


def set_pin(
    engine: Engine,
    cold: ColdStore,
    memory_id: int,
    *,
    pinned: bool,
    embedder: Embedder,
    actor: str,
) -> str:
    """Pin (never ages) or unpin a memory; an archived one is restored first to be pinned."""
    with Session(engine) as session, session.begin():
        namespace = privacy.set_pinned(session, memory_id, pinned=pinned)
        if namespace is not None:
            action = "pin" if pinned else "unpin"
            audit.record(
                session, action, actor=actor, namespace=namespace, target=f"memory:{memory_id}"
            )
            return namespace
    if pinned:
        with Session(engine) as session:
            archived = bool(archive.locate(session, [memory_id]))
        if archived:
            restore(engine, cold, memory_id, embedder, actor=actor)
            return set_pin(engine, cold, memory_id, pinned=pinned, embedder=embedder, actor=actor)
    raise InputError(f"memory {memory_id} does not exist (or is archived: restore it first)")
