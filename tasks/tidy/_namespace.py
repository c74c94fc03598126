"""The weekly tidy of one namespace: ``MEMORY.md``, its entries, the week's summary, archive.

Order, and what an interruption leaves:

1. Select (read only; ``_select`` documents the rule). A namespace whose
   entries were already written for a *later* week is left alone, so a back-fill never
   rolls ``MEMORY.md`` back.
2. Record, in one transaction: entries that entered or changed text get a ``long_term``
   memory embedded with the configured embedder; those that left lose theirs; unchanged
   entries keep memory and vector. Nothing is embedded twice.
3. ``MEMORY.md`` is written aside and swapped in atomically, and only when its bytes
   change. When nothing is selected the previous file stays as it was. A failed write
   raises and leaves the previous file; the next run writes it (step 1 selects the same).
4. The weekly summary is rewritten from the store when its bytes change, after the
   record of which sessions it quotes (``_weekly_file``).
5. Logs dated before today move to the archive (``_archive``).

Step 2's transaction also queues the namespace's ``tidy`` line of ``timeline.jsonl``
(counts only), appended through the outbox before step 5.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import blocks, long_term, memories
from storage.embedding import Embedder
from storage.kernel.settings import Settings
from tasks.files import MemoryRoot, atomic_write, flush_blocks, read_text
from tasks.tidy._archive import move_log, planned_moves, sweep_log_folders
from tasks.tidy._render import Caps, header
from tasks.tidy._select import KINDS, Candidate, Entry, document, score, select
from tasks.tidy._timeline import tidy_block
from tasks.tidy._weekly_file import write_weekly

EXTRACTOR = "weekly-tidy"


@dataclass(frozen=True)
class TidyContext:
    """What every namespace of one run shares."""

    as_of: datetime
    tz: tzinfo
    caps: Caps
    days: int
    half_lives: tuple[float, float]
    embedder: Embedder
    run_id: uuid.UUID | None = None
    dry_run: bool = False

    @property
    def today(self) -> date:
        return self.as_of.astimezone(self.tz).date()

    @property
    def monday(self) -> date:
        """The key of the week: Monday of as_of's local week."""
        return self.today - timedelta(days=self.today.weekday())

    @property
    def window(self) -> tuple[datetime, datetime]:
        """(as_of - days, as_of]: consecutive weekly runs tile time without a gap."""
        return self.as_of - timedelta(days=self.days), self.as_of


def make_context(
    settings: Settings,
    embedder: Embedder,
    as_of: datetime,
    run_id: uuid.UUID | None = None,
    *,
    dry_run: bool = False,
) -> TidyContext:
    tidy = settings.tidy
    return TidyContext(
        as_of=as_of,
        tz=settings.tz,
        caps=Caps(tidy.max_lines, tidy.max_bytes),
        days=tidy.days,
        half_lives=(settings.retrieval.half_life_days, settings.aging.half_life_days),
        embedder=embedder,
        run_id=run_id,
        dry_run=dry_run,
    )


@dataclass(frozen=True)
class Stored:
    """What the tidy needs of an entry already in the store."""

    text: str
    status: str
    memory_id: int | None
    sources: tuple[int, ...] = ()


@dataclass
class MemoryPlan:
    """The selection for one namespace and how it differs from the stored entries."""

    entries: list[Entry]
    stored: dict[str, Stored]
    candidates: int = 0
    later_week: date | None = None
    document: str | None = None


@dataclass
class NamespaceOutcome:
    """What the tidy did (or, in a dry run, would do) to one namespace."""

    namespace: str
    candidates: int = 0
    # Entries by the ids of the memories merged into them, never by their text: reports
    # outlive a ``forget`` of the namespace (they are kept in ``runs`` and in Prefect).
    entered: list[tuple[int, ...]] = field(default_factory=list)
    left: list[tuple[int, ...]] = field(default_factory=list)
    kept: int = 0
    embedded: int = 0
    lines: int = 0
    bytes: int = 0
    memory_md: str = ""
    weekly_file: str | None = None
    logs_moved: list[str] = field(default_factory=list)


def plan_memory(session: Session, ctx: TidyContext, namespace: str) -> MemoryPlan:
    """Select the namespace's entries (read only)."""
    found_entries = long_term.entries(session, namespace)
    stored = {
        k: Stored(e.text, e.status, e.memory_id, tuple(e.memory_ids))
        for k, e in found_entries.items()
    }
    latest = long_term.latest_week(session, namespace)
    if latest is not None and latest > ctx.monday:
        return MemoryPlan([], stored, later_week=latest)
    current = [e for e in found_entries.values() if e.status == "in"]
    carried = sorted({mid for e in current for mid in e.memory_ids})
    rows = long_term.candidates(session, namespace, KINDS, ctx.window, carried)
    found = [_candidate(row, ctx) for row in rows]
    head = header(namespace, ctx.monday)
    chosen = select(head, found, ctx.caps)
    text = document(head, chosen, ctx.caps) if chosen else None
    return MemoryPlan(chosen, stored, candidates=len(found), document=text)


def _candidate(row: Any, ctx: TidyContext) -> Candidate:
    value = score(
        row.importance,
        row.access_count,
        row.last_accessed_at,
        row.occurred_at,
        ctx.as_of,
        ctx.half_lives,
    )
    return Candidate(row.id, row.kind, row.content, value, row.pinned, row.carried, row.session_id)


def diff(plan: MemoryPlan) -> tuple[list[Entry], list[str], list[Entry]]:
    """(entered, keys that left, kept) against the entries currently in the file."""
    current = {k for k, s in plan.stored.items() if s.status == "in"}
    chosen = {e.key for e in plan.entries}
    entered = [e for e in plan.entries if e.key not in current]
    kept = [e for e in plan.entries if e.key in current]
    return entered, sorted(current - chosen), kept


def record_entries(session: Session, ctx: TidyContext, namespace: str, plan: MemoryPlan) -> int:
    """Store the selection in the caller's transaction; returns how many were embedded."""
    entered, left, _kept = diff(plan)
    stale = [plan.stored[k].memory_id for k in left]
    fresh = [e for e in plan.entries if _needs_vector(plan.stored.get(e.key), e)]
    stale += [plan.stored[e.key].memory_id for e in fresh if e.key in plan.stored]
    memories.delete_memories(session, [mid for mid in stale if mid is not None])
    long_term.mark_out(session, namespace, left, ctx.as_of)
    vectors = _embed(session, ctx, namespace, fresh)
    rows = [_entry_row(ctx, namespace, e, vectors, plan.stored.get(e.key)) for e in plan.entries]
    long_term.save_entries(session, rows)
    return len(fresh)


def _needs_vector(stored: Stored | None, entry: Entry) -> bool:
    """New, back after leaving, its text changed, or its long_term memory was removed."""
    return stored is None or stored.memory_id is None or stored.text != entry.text


def _embed(
    session: Session, ctx: TidyContext, namespace: str, entries: list[Entry]
) -> dict[str, int]:
    """Insert a long_term memory per entry; returns their ids by entry key."""
    if not entries:
        return {}
    vectors = ctx.embedder.embed([e.text for e in entries])
    rows = [
        memories.NewMemory(
            namespace=namespace,
            kind=long_term.LONG_TERM_KIND,
            content=e.text,
            content_key=e.key,
            embedding=vectors[i],
            embedding_model=ctx.embedder.name,
            importance=min(1.0, max(0.0, round(e.score, 6))),
            vehemence=0.0,
            session_id=None,
            message_ids=(),
            run_id=ctx.run_id,
            extractor=EXTRACTOR,
            occurred_at=ctx.as_of,
            created_at=ctx.as_of,
        )
        for i, e in enumerate(entries)
    ]
    ids = memories.insert_memories(session, rows)
    return {e.key: mid for e, mid in zip(entries, ids, strict=True)}


def _entry_row(
    ctx: TidyContext, namespace: str, entry: Entry, vectors: dict[str, int], old: Stored | None
) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "entry_key": entry.key,
        "text": entry.text,
        "section": entry.section,
        "memory_ids": list(entry.memory_ids),
        "session_ids": list(entry.session_ids),
        "pinned": entry.pinned,
        "score": entry.score,
        "first_seen_week": ctx.monday,
        "last_seen_week": ctx.monday,
        "status": "in",
        "memory_id": vectors.get(entry.key, old.memory_id if old else None),
        "updated_at": ctx.as_of,
    }


def write_memory_md(root: MemoryRoot, namespace: str, plan: MemoryPlan, *, dry_run: bool) -> str:
    """Swap in the new ``MEMORY.md`` if it differs; says what happened."""
    if plan.later_week is not None:
        return f"left alone: week of {plan.later_week} already tidied"
    if plan.document is None:
        return "kept: nothing selected, previous file unchanged"
    path = root.path(f"{namespace}/MEMORY.md")
    if read_text(root.fs, path) == plan.document:
        return "unchanged"
    if dry_run:
        return "would write"
    atomic_write(root.fs, path, plan.document.encode("utf-8"))
    return "written"


def archive_logs(root: MemoryRoot, ctx: TidyContext, namespace: str) -> list[str]:
    """Move the logs dated before today; returns the sources moved (or to move)."""
    moves = planned_moves(root, namespace, ctx.today)
    if ctx.dry_run:
        return [m.source for m in moves]
    sweep_log_folders(root, namespace)
    return [m.source for m in moves if move_log(root, m)]


def tidy_namespace(
    engine: Engine, root: MemoryRoot, ctx: TidyContext, namespace: str
) -> NamespaceOutcome:
    """Steps 1-5 of the module docstring for one namespace."""
    with Session(engine) as session:
        plan = plan_memory(session, ctx, namespace)
    entered, left, kept = diff(plan) if plan.document is not None else ([], [], [])
    outcome = NamespaceOutcome(namespace, plan.candidates, [e.memory_ids for e in entered])
    outcome.left = [plan.stored[k].sources for k in left]
    outcome.kept = len(kept)
    if plan.document is not None:
        outcome.lines, outcome.bytes = plan.document.count("\n"), len(plan.document.encode())
    if not ctx.dry_run and plan.document is not None:
        with Session(engine) as session, session.begin():
            outcome.embedded = record_entries(session, ctx, namespace, plan)
            line = tidy_block(namespace, ctx.monday, _counts(outcome), ctx.as_of, ctx.run_id)
            blocks.add_blocks(session, [line])
    outcome.memory_md = write_memory_md(root, namespace, plan, dry_run=ctx.dry_run)
    outcome.weekly_file = write_weekly(engine, root, ctx, namespace)
    if not ctx.dry_run:  # the timeline's line, and log blocks left pending, before the move
        flush_blocks(engine, root, namespace)
    outcome.logs_moved = archive_logs(root, ctx, namespace)
    return outcome


def _counts(o: NamespaceOutcome) -> dict[str, int]:
    same = {name: getattr(o, name) for name in ("candidates", "kept", "embedded", "lines", "bytes")}
    return same | {"entered": len(o.entered), "left": len(o.left)}
