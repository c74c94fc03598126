"""``archivist eval``: build memory from labelled sessions the daily sync's way, then score search.

Inputs. SESSIONS is one JSONL file holding many sessions: each ``{"type": "session"}`` line
starts a session and the message lines after it belong to it (the transcript format of
``tasks.transcripts``, concatenated). QUERIES holds one question a line (``EvalQuery``);
evidence messages are named ``"<session_id>:<message_id>"`` because message ids are only
unique within a session. Bad lines in either file are reported with their line number and
skipped, never dropped silently.

Memory is built with the daily sync's own steps, day by day: for each local day with
messages, ``plan_sync`` and ``process_batch`` as of the end of that day, with
``min_user_messages=1`` so no labelled session is skipped for being short. Memory files are
not written. The eval writes into the configured store, so point it at a scratch one.
"""

from __future__ import annotations

import json
import re
import time as clock
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.errors import InputError
from storage.retrieval import Hit, Retriever
from storage.sessions import load_sessions
from tasks.embedding import Embedder
from tasks.extraction.heuristic import HeuristicExtractor
from tasks.sync import BatchOutcome, SyncContext, plan_sync, process_batch
from tasks.transcripts import Problem, Transcript, ingest, parse_transcript

MIN_USER_MESSAGES = 1
_FIRST_ON = re.compile(r"first on line (\d+)")
EARLIEST = datetime.min.replace(tzinfo=UTC)


class EvalQuery(BaseModel):
    """One labelled question, asked in a namespace at a time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    namespace: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    question: str = Field(min_length=1, max_length=10_000)
    asked_at: datetime
    category: str = Field(min_length=1, max_length=100)
    evidence_message_ids: tuple[str, ...] = ()
    evidence_session_ids: tuple[str, ...] = ()

    @field_validator("asked_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.utcoffset() is None:
            raise ValueError("asked_at needs a UTC offset, e.g. 2026-11-20T10:00:00Z")
        return value

    @model_validator(mode="after")
    def _qualified(self) -> EvalQuery:
        prefixes = tuple(f"{sid}:" for sid in self.evidence_session_ids)
        bad = [m for m in self.evidence_message_ids if not m.startswith(prefixes) or m in prefixes]
        if bad:
            raise ValueError(
                f"evidence message ids {bad} are not '<session_id>:<message_id>' with a session "
                "listed in evidence_session_ids"
            )
        return self


Numbered = tuple[int, EvalQuery]


def _describe(exc: ValidationError) -> str:
    if any(err["type"] == "json_invalid" for err in exc.errors()):
        return "not valid JSON"
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'object'}: {err['msg']}" for err in exc.errors()
    )


def _parse_query(name: str, lineno: int, line: str) -> Problem | EvalQuery:
    try:
        return EvalQuery.model_validate_json(line)
    except ValidationError as exc:
        return Problem(name, lineno, f"{_describe(exc)}; line skipped")


def read_queries(name: str, text: str) -> tuple[list[Numbered], list[Problem]]:
    """Valid questions with their line numbers, and a problem for every bad line."""
    queries: list[Numbered] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parsed = _parse_query(name, lineno, line)
        if isinstance(parsed, Problem):
            problems.append(parsed)
        elif parsed.id in first_line:
            reason = f"duplicate question id {parsed.id!r} (first on line {first_line[parsed.id]})"
            problems.append(Problem(name, lineno, f"{reason}; kept the first"))
        else:
            first_line[parsed.id] = lineno
            queries.append((lineno, parsed))
    return queries, problems


def _starts_session(line: str) -> bool:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("type") == "session"


def _shift(problem: Problem, offset: int) -> Problem:
    """A chunk's problem on the whole file's lines (including the duplicate's first line)."""
    line = None if problem.line is None else problem.line + offset
    reason = _FIRST_ON.sub(lambda m: f"first on line {int(m[1]) + offset}", problem.reason)
    return Problem(problem.file, line, reason.replace("file skipped", "session skipped"))


def read_sessions(name: str, text: str) -> tuple[list[Transcript], list[Problem]]:
    """Every session of a multi-session JSONL file; problems carry the file's line numbers."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _starts_session(line)]
    head = starts[0] if starts else len(lines)
    problems = [
        Problem(name, i + 1, "line before the first session line; skipped")
        for i in range(head)
        if lines[i].strip()
    ]
    transcripts: list[Transcript] = []
    first_line: dict[str, int] = {}
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        transcript, found = parse_transcript(name, "\n".join(lines[start:end]))
        problems += [_shift(p, start) for p in found]
        if transcript is None:
            continue
        sid = transcript.session.id
        if sid in first_line:
            reason = f"duplicate session id {sid!r} (first on line {first_line[sid]})"
            problems.append(Problem(name, start + 1, f"{reason}; session skipped"))
            continue
        first_line[sid] = start + 1
        transcripts.append(transcript)
    return transcripts, problems


def check_evidence(
    name: str, queries: Sequence[Numbered], transcripts: Sequence[Transcript]
) -> tuple[list[EvalQuery], list[Problem]]:
    """Questions whose evidence is in the sessions file, in their namespace; the rest reported."""
    namespaces = {t.session.id: t.session.namespace for t in transcripts}
    messages = {f"{t.session.id}:{m.id}" for t in transcripts for m in t.messages}
    kept: list[EvalQuery] = []
    problems: list[Problem] = []
    for lineno, query in queries:
        wrong = [s for s in query.evidence_session_ids if namespaces.get(s) != query.namespace]
        missing = [m for m in query.evidence_message_ids if m not in messages]
        if wrong:
            reason = f"evidence sessions {wrong} are not sessions of namespace {query.namespace!r}"
        elif missing:
            reason = f"evidence messages {missing} are not in the sessions file"
        else:
            kept.append(query)
            continue
        problems.append(Problem(name, lineno, f"question {query.id!r}: {reason}; skipped"))
    return kept, problems


@dataclass(frozen=True)
class EvalInputs:
    """The labelled set: sessions, checked questions, and every problem found reading them."""

    transcripts: tuple[Transcript, ...]
    queries: tuple[EvalQuery, ...]
    problems: tuple[Problem, ...]


def load_inputs(sessions: tuple[str, str], queries: tuple[str, str]) -> EvalInputs:
    """Parse ``(name, text)`` of the sessions and queries files; no valid question is an error."""
    transcripts, problems = read_sessions(*sessions)
    numbered, query_problems = read_queries(*queries)
    checked, evidence_problems = check_evidence(queries[0], numbered, transcripts)
    if not checked:
        raise InputError(f"no usable question in {queries[0]}; see the problems reported")
    return EvalInputs(
        tuple(transcripts), tuple(checked), (*problems, *query_problems, *evidence_problems)
    )


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
) -> BuildReport:
    """Ingest the sessions, then run the sync step as of the end of each day with messages."""
    ingested = ingest(engine, _Listed(transcripts))
    labelled = {t.session.id for t in transcripts}
    days = local_days(transcripts, tz)
    report = BuildReport(ingested.sessions, ingested.messages, len(days))
    current: set[str] = set()
    for day in days:
        as_of, hours = day_run(day, tz)
        ctx = SyncContext(HeuristicExtractor(), embedder, as_of, tz, run_id=None)
        outcome, synced = _sync_day(engine, ctx, hours, labelled, batch_size)
        report.written.merge(outcome)
        current |= synced
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
) -> list[QueryRun]:
    """Ask each question as of its time; later memories are out of range, access not logged."""
    runs: list[QueryRun] = []
    for q in queries:
        started = clock.perf_counter()
        hits = retriever.search(
            q.namespace,
            q.question,
            limit=limit,
            time_range=(EARLIEST, q.asked_at),
            as_of=q.asked_at,
            weights=weights,
            record_access=False,
        )
        runs.append(QueryRun(q, tuple(hits), (clock.perf_counter() - started) * 1000))
    return runs
