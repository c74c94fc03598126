"""What the queue commands do: enqueue, stats, one drain run, and the continuous worker.

The worker runs the plain drain functions, not Prefect: no engine start-up, and an
enqueued item wakes it through LISTEN/NOTIFY within milliseconds.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from types import FrameType
from typing import Any

from sqlalchemy.orm import Session

from storage import queue
from storage.kernel.errors import InputError
from storage.kernel.json_depth import NestedTooDeeply, load_json
from storage.kernel.settings import Settings
from storage.queue import Enqueued
from storage.server.connect import connect
from storage.server.engine import open_store
from storage.server.migrate import require_current
from tasks.queue import (
    DrainReport,
    Hooks,
    default_worker_name,
    drain_once,
    fold_pending,
    run_worker,
)

Echo = Callable[[str], None]


def enqueue_item(
    settings: Settings, namespace: str, op: str, payload: str, key: str | None, echo: Echo
) -> Enqueued:
    """Queue one write given as JSON text; prints its id, or the first one's for a repeated key."""
    try:
        parsed: Any = load_json(payload)
    except NestedTooDeeply:
        raise InputError("--payload is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"--payload is not valid JSON: {exc}") from exc
    store = open_store(settings)
    require_current(store.engine, settings)
    with Session(store.engine) as session, session.begin():
        queued = queue.enqueue(
            session,
            namespace,
            op,
            parsed,
            idempotency_key=key,
            settings=settings,
        )
    if queued.duplicate:
        echo(f"already queued as item {queued.id} (same idempotency key {key!r} for {namespace})")
    else:
        echo(f"queued item {queued.id} ({op} for {namespace})")
    return queued


def show_stats(settings: Settings, echo: Echo) -> None:
    """Print counts per status, the oldest wait and the newest dead items with their errors."""
    store = open_store(settings)
    require_current(store.engine, settings)
    with Session(store.engine) as session:
        stats = queue.queue_stats(session, None, settings.queue)
        dead = queue.dead_items(session, 10)
    oldest = stats.oldest_pending_seconds
    echo(
        f"pending {stats.pending} (due {stats.ready}), processing {stats.processing} "
        f"(stuck {stats.stuck}, worker gone {stats.abandoned}), completed {stats.completed}, "
        f"dead {stats.dead}"
    )
    echo(f"oldest pending item waits {'-' if oldest is None else f'{oldest:.1f} s'}")
    for item in dead:
        echo(f"  dead item {item.id} ({item.op}, {item.namespace}, {item.attempts} attempts):")
        echo(f"    {item.last_error}")


def run_drain(settings: Settings, as_of: datetime | None, max_batches: int) -> Any:
    """One run of the memory-queue-drain flow; returns its report."""
    from flows.queue_drain import memory_queue_drain

    if as_of is not None and as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=settings.tz)
    return memory_queue_drain(as_of=as_of, max_batches=max_batches)


def work(settings: Settings, *, once: bool, echo: Echo) -> DrainReport:
    """Drain continuously until Ctrl-C or SIGTERM (``once``: until nothing is due)."""
    store, embedder = connect(settings)
    name = default_worker_name()

    def show(batch: DrainReport) -> None:
        echo(describe_batch(batch))

    if once:
        report = drain_once(store.engine, embedder, settings, name, hooks=Hooks(on_batch=show))
        report.accesses_folded = fold_pending(store.engine)
    else:
        echo(f"worker {name}: draining; Ctrl-C or SIGTERM stops")
        with _stop_on_signals() as stop:
            report = run_worker(
                store.engine, embedder, settings, stop=stop, worker=name, on_report=show
            )
    echo(
        f"worker stopped: {report.completed} completed, {report.retried} retry later, "
        f"{report.dead} dead, {report.reclaimed} reclaimed; {report.accesses_folded} "
        "accesses folded into their memories"
    )
    return report


def describe_batch(batch: DrainReport) -> str:
    """One line per batch for the worker's output."""
    now = datetime.now().astimezone().strftime("%H:%M:%S")
    line = (
        f"{now} batch of {batch.claimed}: {batch.completed} completed, "
        f"{batch.retried} retry later, {batch.dead} dead ({batch.seconds * 1000:.0f} ms)"
    )
    return "\n".join([line] + [f"  {error}" for error in batch.errors])


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM; the previous handlers come back afterwards."""
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
