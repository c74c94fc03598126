"""Draining the queue: claimed batches run and settled, drain passes, the continuous worker.

A batch is claimed in one short transaction, then executed and completed in another, so
an item's work and its completion commit together: a crash in between leaves the item
processing, reclaim hands it out again, and it runs exactly once. Both transactions run
on the same connection, held for the whole drain pass: the claim records that backend's
pid, and while the drainer lives its backend does, so its claims are never taken for a
dead worker's; when it dies, the next claim anywhere reclaims them. What each op does is
in ``_execute``. When a batch fails, its items run one by one, so one bad item fails
alone and goes through ``fail`` (backoff, then dead; a permanent refusal is dead at once).
Documents run after the batch's other items, each alone, with its claim's clock restarted:
embedding one may take minutes, and the stuck timeout must measure that document alone.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from storage import queue
from storage.embedding import Embedder
from storage.kernel.settings import Settings
from storage.operations.access import fold_accesses
from storage.queue import QueueItem
from tasks.queue._execute import ITEM_ERRORS, execute, is_permanent

_KEPT_ERRORS = 20
# Ops that run in a transaction of their own, after the batch's others (they may take
# minutes: a document is parsed, chunked and embedded whole).
ALONE = frozenset({"ADD_DOCUMENT"})


@dataclass
class DrainReport:
    """What drainers did: per batch, per drain pass, or merged over a run."""

    batches: int = 0
    claimed: int = 0
    completed: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0
    reclaimed: int = 0
    reclaimed_dead: int = 0
    accesses_folded: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def merge(self, other: DrainReport) -> None:
        for name, value in asdict(other).items():
            if name == "errors":
                self.errors = (self.errors + other.errors)[:_KEPT_ERRORS]
            else:
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_worker_name() -> str:
    """host:pid:thread, so claims say which drainer holds them."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:100]


def run_batch(
    conn: Connection,
    items: Sequence[QueueItem],
    embedder: Embedder,
    settings: Settings,
    now: datetime,
    *,
    clock: datetime | None = None,
) -> DrainReport:
    """Execute claimed items together, or one by one when the batch as a whole fails; then
    each document alone, its claim's clock restarted (at ``clock``, None: the database's),
    so that the stuck timeout measures one document's embedding and not those claimed with
    it.

    ``conn`` is the connection that claimed them: the claims live as long as its backend.
    """
    together = [item for item in items if item.op not in ALONE]
    report = DrainReport(batches=1, claimed=len(items))
    report.merge(_run_together(conn, together, embedder, settings, now))
    for item in items:
        if item.op in ALONE:
            alone = _run_alone(conn, item, embedder, settings, now, restart=True, clock=clock)
            report.merge(alone)
    return report


def _run_together(
    conn: Connection,
    items: Sequence[QueueItem],
    embedder: Embedder,
    settings: Settings,
    now: datetime,
) -> DrainReport:
    report = DrainReport()
    if not items:
        return report
    try:
        if _execute_and_complete(conn, items, embedder, now, settings):
            report.completed = len(items)
            return report
    except ITEM_ERRORS as exc:
        if len(items) == 1:
            _record_failure(conn, items[0], exc, now, settings, report)
            return report
    for item in items:
        report.merge(_run_alone(conn, item, embedder, settings, now))
    return report


def _run_alone(
    conn: Connection,
    item: QueueItem,
    embedder: Embedder,
    settings: Settings,
    now: datetime,
    *,
    restart: bool = False,
    clock: datetime | None = None,
) -> DrainReport:
    """One item in a transaction of its own; with ``restart``, its claim's clock restarted
    first, at ``clock`` (None: the database's)."""
    report = DrainReport()
    if restart:
        with Session(conn) as session, session.begin():
            held = queue.restart_claim(session, item, clock)
        if not held:
            report.lost = 1
            return report
    try:
        if _execute_and_complete(conn, [item], embedder, now, settings):
            report.completed = 1
        else:
            report.lost = 1
    except ITEM_ERRORS as exc:
        _record_failure(conn, item, exc, now, settings, report)
    return report


def _execute_and_complete(
    conn: Connection,
    items: Sequence[QueueItem],
    embedder: Embedder,
    now: datetime,
    settings: Settings,
) -> bool:
    """One transaction; rolled back (False) when a claim was taken over meanwhile (or its
    item deleted, as a document's erasure deletes the items that carry it)."""
    with Session(conn) as session:
        queue.relax_commit(session)
        results = execute(session, items, embedder, now, settings.documents)
        done = queue.complete(session, list(zip(items, results, strict=True)), now)
        if len(done) < len(items):
            session.rollback()
            return False
        session.commit()
        return True


def describe_failure(exc: Exception) -> str:
    """What failed, for the queue row, the report and the log: our own error's message (it
    names fields, not values), or the database's error class and SQLSTATE, whose message
    and statement may quote the item's values."""
    if isinstance(exc, DBAPIError):
        code = getattr(exc.orig, "sqlstate", None) or "unknown"
        return f"{type(exc).__name__} ({type(exc.orig).__name__}, SQLSTATE {code})"
    return f"{type(exc).__name__}: {exc}"


def _record_failure(
    conn: Connection,
    item: QueueItem,
    exc: Exception,
    now: datetime,
    settings: Settings,
    report: DrainReport,
) -> None:
    permanent = is_permanent(exc)
    error = describe_failure(exc) + (" (permanent: not retried)" if permanent else "")
    with Session(conn) as session, session.begin():
        status = queue.fail(session, item, error, now, settings.queue, permanent=permanent)
    if status == "lost":
        report.lost += 1
        return
    if status == "dead":
        report.dead += 1
    else:
        report.retried += 1
    if len(report.errors) < _KEPT_ERRORS:
        report.errors.append(f"item {item.id} ({item.op}, attempt {item.attempts}): {error}")


@dataclass(frozen=True)
class Hooks:
    """What a pass listens to: ``stop``, set to end it after the batch in hand, and
    ``on_batch``, told of each batch's report."""

    stop: threading.Event | None = None
    on_batch: Callable[[DrainReport], None] | None = None


NO_HOOKS = Hooks()


def drain_once(
    engine: Engine,
    embedder: Embedder,
    settings: Settings,
    worker: str,
    now: datetime | None = None,
    *,
    max_batches: int | None = None,
    hooks: Hooks = NO_HOOKS,
) -> DrainReport:
    """Reclaim, claim and run batches until none is due (or ``max_batches``)."""
    stop, on_batch = hooks.stop, hooks.on_batch
    started = time.perf_counter()
    report = DrainReport()
    # One connection for the whole pass: no pool checkout and ping per transaction, and
    # the claiming backend stays alive until its claims are settled.
    with engine.connect() as conn:
        while max_batches is None or report.batches < max_batches:
            if stop is not None and stop.is_set():
                break
            batch = _claim_and_run(conn, embedder, settings, worker, now)
            report.merge(batch)
            if not batch.claimed:
                break
            if on_batch is not None:
                on_batch(batch)
    report.seconds = time.perf_counter() - started
    return report


def _claim_and_run(
    conn: Connection, embedder: Embedder, settings: Settings, worker: str, now: datetime | None
) -> DrainReport:
    """Reclaim what gone or stuck workers hold, then claim a batch and run it."""
    started = time.perf_counter()
    stuck_after = timedelta(seconds=settings.queue.stuck_after_seconds)
    with Session(conn) as session, session.begin():
        queue.relax_commit(session)
        gone = settings.queue.detect_gone_workers
        reclaimed = queue.reclaim(session, now, stuck_after, gone_workers=gone)
        items = queue.claim(session, worker, settings.queue.claim_batch, now)
    report = DrainReport(reclaimed=reclaimed.requeued, reclaimed_dead=reclaimed.dead)
    if items:
        at = now or items[0].claimed_at
        report.merge(run_batch(conn, items, embedder, settings, at, clock=now))
    report.seconds = time.perf_counter() - started
    return report


def run_worker(
    engine: Engine,
    embedder: Embedder,
    settings: Settings,
    *,
    stop: threading.Event,
    worker: str | None = None,
    on_report: Callable[[DrainReport], None] | None = None,
) -> DrainReport:
    """Drain until ``stop`` is set; between passes wait for NOTIFY or ``poll_seconds``.

    An enqueue wakes the worker within milliseconds (the insert trigger notifies
    ``archivist_queue``); the poll catches items whose backoff ran out and stuck ones. The
    accesses searches counted are folded into their memories at once and then every
    ``fold_seconds``, as each memory-queue-drain run does: a worker that replaces the
    drain's schedule keeps access counts, frequency and salience current too.
    """
    name = worker or default_worker_name()
    total = DrainReport()
    fold_at = time.monotonic()
    with queue.notifications(engine) as wait:
        while not stop.is_set():
            hooks = Hooks(stop=stop, on_batch=on_report)
            total.merge(drain_once(engine, embedder, settings, name, hooks=hooks))
            if time.monotonic() >= fold_at:
                total.accesses_folded += fold_pending(engine)
                fold_at = time.monotonic() + settings.queue.fold_seconds
            wait(settings.queue.poll_seconds)
    return total


def fold_pending(engine: Engine) -> int:
    """Fold the accesses searches counted into their memories' counters; how many."""
    with Session(engine) as session, session.begin():
        return fold_accesses(session).accesses
