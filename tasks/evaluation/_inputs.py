"""``archivist eval``'s inputs: labelled sessions and questions, read and checked.

SESSIONS is one JSONL file holding many sessions: each ``{"type": "session"}`` line starts
a session and the message lines after it belong to it (the transcript format of
``tasks.sync``, concatenated). QUERIES holds one question a line (``EvalQuery``); evidence
messages are named ``"<session_id>:<message_id>"`` because message ids are only unique
within a session. Bad lines in either file are reported with their line number and
skipped, never dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from storage.kernel.errors import InputError
from storage.kernel.inputs import LATEST_INSTANT, Instant, describe
from storage.kernel.records import NAMESPACE_PATTERN
from tasks.sync import Problem, Transcript, not_utf8, parse_transcript, split_lines

_FIRST_ON = re.compile(r"first on line (\d+)")
# The categories of the labelled sets (bench/data/eval/README.md); another one is kept and
# scored under its own name, but reported, since a typo would split a category in two.
CATEGORIES = frozenset(
    {
        "single-hop",
        "paraphrase",
        "multi-hop",
        "temporal",
        "knowledge-update",
        "preference",
        "unanswerable",
        "nonsense",
        "adversarial-namespace",
        "old-evidence",
        "multilingual-de",
        "multilingual-es",
        "multilingual-ja",
    }
)


class EvalQuery(BaseModel):
    """One labelled question, asked in a namespace at a time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    namespace: str = Field(pattern=NAMESPACE_PATTERN)
    question: str = Field(min_length=1, max_length=10_000)
    asked_at: Instant
    category: str = Field(min_length=1, max_length=100)
    evidence_message_ids: tuple[str, ...] = ()
    evidence_session_ids: tuple[str, ...] = ()

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
    return describe(exc)


def _parse_query(name: str, lineno: int, line: str) -> Problem | EvalQuery:
    if not_utf8(line):
        return Problem(name, lineno, "not valid UTF-8; line skipped")
    try:
        return EvalQuery.model_validate_json(line)
    except ValidationError as exc:
        return Problem(name, lineno, f"{_describe(exc)}; line skipped")


def read_queries(name: str, text: str) -> tuple[list[Numbered], list[Problem]]:
    """Valid questions with their line numbers, and a problem for every bad line."""
    queries: list[Numbered] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(split_lines(text), start=1):
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


def read_sessions(
    name: str, text: str, now: datetime | None = None
) -> tuple[list[Transcript], list[Problem]]:
    """Every session of a multi-session JSONL file; problems carry the file's line numbers.

    ``now``: the clock message times may not pass (by more than
    ``storage.kernel.inputs.FUTURE_SLACK``); None: the real one.
    """
    lines = split_lines(text)
    starts = [i for i, line in enumerate(lines) if _starts_session(line)]
    head = starts[0] if starts else len(lines)
    problems = [
        Problem(name, i + 1, "line before the first session line; skipped")
        for i in range(head)
        if lines[i].strip()
    ]
    transcripts: list[Transcript] = []
    first_line: dict[str, int] = {}
    for start, end in zip(starts, [*starts[1:], len(lines)][: len(starts)], strict=True):
        transcript, found = parse_transcript(name, "\n".join(lines[start:end]), now)
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
    said_at = {f"{t.session.id}:{m.id}": m.timestamp for t in transcripts for m in t.messages}
    kept: list[EvalQuery] = []
    problems: list[Problem] = []
    for lineno, query in queries:
        wrong = [s for s in query.evidence_session_ids if namespaces.get(s) != query.namespace]
        missing = [m for m in query.evidence_message_ids if m not in said_at]
        later = [
            m for m in query.evidence_message_ids if m in said_at and said_at[m] > query.asked_at
        ]
        if wrong:
            reason = f"evidence sessions {wrong} are not sessions of namespace {query.namespace!r}"
        elif missing:
            reason = f"evidence messages {missing} are not in the sessions file"
        elif later:
            asked = query.asked_at.isoformat()
            reason = f"evidence messages {later} were said after the question (asked_at {asked})"
        else:
            kept.append(query)
            if query.category not in CATEGORIES:
                problems.append(Problem(name, lineno, _unknown_category(query)))
            continue
        problems.append(Problem(name, lineno, f"question {query.id!r}: {reason}; skipped"))
    return kept, problems


def _unknown_category(query: EvalQuery) -> str:
    return (
        f"question {query.id!r}: unknown category {query.category!r} (known: "
        f"{', '.join(sorted(CATEGORIES))}); kept, scored under its own name"
    )


@dataclass(frozen=True)
class EvalInputs:
    """The labelled set: sessions, checked questions, and every problem found reading them."""

    transcripts: tuple[Transcript, ...]
    queries: tuple[EvalQuery, ...]
    problems: tuple[Problem, ...]


def load_inputs(sessions: tuple[str, str], queries: tuple[str, str]) -> EvalInputs:
    """Parse ``(name, text)`` of the sessions and queries files; no valid question is an error.

    A labelled history is replayed, so it has no today: its message times are checked as
    instants (1900 to 2200, ``storage.kernel.inputs``), and a set may be dated ahead of the clock.
    """
    transcripts, problems = read_sessions(*sessions, now=LATEST_INSTANT)
    if not transcripts:
        raise InputError(
            f"no session in {sessions[0]}: each session starts with a line "
            '{"type": "session", ...} (the transcript format), its messages after it'
        )
    numbered, query_problems = read_queries(*queries)
    checked, evidence_problems = check_evidence(queries[0], numbered, transcripts)
    if not checked:
        raise InputError(f"no usable question in {queries[0]}; see the problems reported")
    return EvalInputs(
        tuple(transcripts), tuple(checked), (*problems, *query_problems, *evidence_problems)
    )
