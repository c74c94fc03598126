"""``archivist eval``: build memory from labelled sessions the daily sync's way, then search.

Memory is built with the daily sync's own steps, day by day: for each local day with
messages, ``plan_sync`` and ``process_batch`` as of the end of that day, with
``min_user_messages=1`` so no labelled session is skipped for being short. Memory files are
not written. The eval writes into the configured store, so point it at a scratch one.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import episodes, memories
from storage.embedding import Embedder
from storage.kernel.errors import InputError
from storage.kernel.inputs import EARLIEST
from storage.kernel.records import SessionState
from storage.retrieval import Hit, Retriever, SearchOptions
from storage.sessions import load_sessions, other_data
from tasks.evaluation._inputs import EvalQuery
from tasks.extraction import Extractor, HeuristicExtractor
from tasks.sync import (
    BatchOutcome,
    Problem,
    SyncContext,
    Transcript,
    ingest,
    plan_sync,
    process_batch,
)

MIN_USER_MESSAGES = 1

OnProgress = Callable[[int, int], None]


class _Listed:
    """A session source over already parsed transcripts."""

    def __init__(self, transcripts: Sequence[Transcript]) -> None:
        self.transcripts = transcripts

    def read(self) -> Iterator[Transcript | Problem]:
        yield from self.transcripts


def check_namespaces(engine: Engine, transcripts: Sequence[Transcript]) -> None:
    """Refuse labelled sessions already stored under another namespace."""
    with Session(engine) as session:
        stored = load_sessions(session, [t.session.id for t in transcripts])
    clashes = [
        f"{t.session.id} (stored in {stored[t.session.id].namespace!r}, "
        f"labelled {t.session.namespace!r})"
        for t in transcripts
        if t.session.id in stored and stored[t.session.id].namespace != t.session.namespace
    ]
    if clashes:
        raise InputError(
            "labelled sessions already exist in the store under another namespace: "
            f"{', '.join(clashes)}; run the eval on a scratch store "
            "(ARCHIVIST_DATA_DIR=/tmp/archivist-eval, or another ARCHIVIST_DATABASE_URL)"
        )


def check_scratch(engine: Engine, transcripts: Sequence[Transcript]) -> None:
    """Refuse a store whose labelled namespaces hold data from outside the labelled set.

    Those memories would compete with the labelled ones and lower the figures silently.
    Running the same set again on its own scratch store is fine.
    """
    namespaces = sorted({t.session.namespace for t in transcripts})
    with Session(engine) as session:
        found = other_data(session, namespaces, [t.session.id for t in transcripts])
    if found:
        counts = ", ".join(f"{ns} ({n} rows)" for ns, n in found.items())
        raise InputError(
            f"the store already holds other data in the labelled namespaces {counts}; "
            "it would mix into the results. Run the eval on a scratch store "
            "(ARCHIVIST_DATA_DIR=/tmp/archivist-eval, or another ARCHIVIST_DATABASE_URL), "
            "or pass --allow-existing to measure this store as it is"
        )


def local_days(transcripts: Sequence[Transcript], tz: tzinfo) -> list[date]:
    """Distinct local days with messages, ascending."""
    return sorted({m.timestamp.astimezone(tz).date() for t in transcripts for m in t.messages})


def day_run(day: date, tz: tzinfo) -> tuple[datetime, float]:
    """As-of (the day's last instant) and window hours that cover the whole local day.

    At least 24 hours, and the day's real length on a 25-hour day: too wide only re-plans
    sessions already current, too narrow would miss messages.
    """
    start = datetime.combine(day, time.min, tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)
    hours = (end.astimezone(UTC) - start.astimezone(UTC)).total_seconds() / 3600
    return end - timedelta(microseconds=1), max(24.0, hours)


@dataclass
class BuildReport:
    """What building memory did: days synced, sessions written, labelled sessions left out."""

    sessions: int = 0
    messages: int = 0
    days: int = 0
    written: BatchOutcome = field(default_factory=BatchOutcome)
    without_memory: list[str] = field(default_factory=list)


def _sync_day(
    engine: Engine, ctx: SyncContext, hours: float, labelled: set[str], batch_size: int
) -> tuple[BatchOutcome, set[str]]:
    """One day's plan and batches, limited to the labelled sessions; returns the ones current."""
    with Session(engine) as session:
        plan = plan_sync(session, ctx.as_of, hours, MIN_USER_MESSAGES, None)
    work = [c for c in plan.to_process if c.session_id in labelled]
    outcome = BatchOutcome()
    for i in range(0, len(work), batch_size):
        with Session(engine) as session, session.begin():
            outcome.merge(process_batch(session, ctx, work[i : i + batch_size]))
    current = {c.session_id for c in work} | set(plan.unchanged) | set(plan.later_state)
    return outcome, current & labelled


def build_memory(
    engine: Engine,
    transcripts: Sequence[Transcript],
    embedder: Embedder,
    tz: tzinfo,
    batch_size: int = 500,
    on_day: OnProgress | None = None,
    *,
    turn_context: bool = False,
) -> BuildReport:
    """Ingest the sessions, then run the sync step as of the end of each day with messages.

    ``on_day(done, total)`` hears of each day synced; ``turn_context``: turns embedded with
    their context (the setting ``embedding.turn_context``).
    """
    ingested = ingest(engine, _Listed(transcripts))
    labelled = {t.session.id for t in transcripts}
    days = local_days(transcripts, tz)
    report = BuildReport(ingested.sessions, ingested.messages, len(days))
    current: set[str] = set()
    for number, day in enumerate(days, start=1):
        as_of, hours = day_run(day, tz)
        extractor = HeuristicExtractor(embedder, tz)
        ctx = SyncContext(extractor, embedder, as_of, tz, None, turn_context=turn_context)
        outcome, synced = _sync_day(engine, ctx, hours, labelled, batch_size)
        report.written.merge(outcome)
        current |= synced
        if on_day is not None:
            on_day(number, len(days))
    report.without_memory = sorted(labelled - current)
    return report


@dataclass(frozen=True)
class QueryRun:
    """One question, the hits it got, and how long the search took."""

    query: EvalQuery
    hits: tuple[Hit, ...]
    ms: float


def run_queries(
    retriever: Retriever,
    queries: Sequence[EvalQuery],
    limit: int,
    weights: dict[str, float] | None = None,
    on_query: OnProgress | None = None,
) -> list[QueryRun]:
    """Ask each question as of its time; later memories are out of range, access not logged.

    ``on_query(done, total)`` hears of each question answered (outside its timing).
    """
    runs: list[QueryRun] = []
    for q in queries:
        started = clock.perf_counter()
        hits = retriever.search(
            q.namespace,
            q.question,
            limit=limit,
            as_of=q.asked_at,
            record_access=False,
            options=SearchOptions(time_range=(EARLIEST, q.asked_at), weights=weights),
        )
        runs.append(QueryRun(q, tuple(hits), (clock.perf_counter() - started) * 1000))
        if on_query is not None:
            on_query(len(runs), len(queries))
    return runs


FACT_KINDS = ("fact", "preference", "decision")

Produced = dict[str, tuple[str, list[str]]]


def read_produced(engine: Engine, session_ids: Sequence[str]) -> Produced:
    """What the build wrote for these sessions: episode summary and fact texts of each."""
    with Session(engine) as session:
        summaries = episodes.summaries_by_session(session, session_ids)
        facts = memories.contents_by_session(session, list(summaries), FACT_KINDS)
    return {sid: (summary, facts[sid]) for sid, summary in summaries.items()}


def extract_directly(transcripts: Sequence[Transcript], extractor: Extractor) -> Produced:
    """Summary and facts of each whole session, extracted without a store (what the build
    ends with: a session's last state replaces the episode and memories of earlier ones)."""
    out: Produced = {}
    for t in transcripts:
        state = SessionState(session=t.session, messages=t.messages, fingerprint="direct")
        extraction = extractor.extract(state)
        facts = [m.content for m in extraction.memories if m.kind in FACT_KINDS]
        out[t.session.id] = (extraction.episode.summary, facts)
    return out
