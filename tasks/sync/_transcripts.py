"""Session sources: JSONL transcripts (one file per session) and how they enter the store.

Format, one JSON object per line (README, "Transcript format"):
line 1: ``{"type": "session", "id", "namespace", "agent", "kind", "title"?}``;
then:   ``{"type": "message", "id", "role", "speaker", "content", "timestamp"}``.

Bad input never stops the load and is never dropped silently: each bad line is reported
as a ``Problem`` with file and line number and the rest of the file is loaded. A file whose
session line is bad, or that cannot be read, is reported once and skipped whole. So is a
session whose id is already stored under another namespace (it is never moved), and one
the database refuses: a batch that fails is written again one session at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from fsspec import AbstractFileSystem
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.kernel.errors import ROWS_REFUSED, InputError
from storage.kernel.inputs import check_keys, describe
from storage.kernel.json_depth import load_json
from storage.kernel.records import MessageRecord, SessionRecord
from storage.sessions import load_sessions, record_messages, record_session

_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes not UTF-8
_LINE_END = re.compile("\r\n|\r|\n")


@dataclass(frozen=True)
class Problem:
    """One piece of bad input, and what was done about it."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class Transcript:
    """One session and its valid messages, with the file it came from."""

    source: str
    session: SessionRecord
    messages: tuple[MessageRecord, ...]


class SessionSource(Protocol):
    """Anything that yields sessions with their messages, and problems with its input."""

    def read(self) -> Iterator[Transcript | Problem]: ...


def split_lines(text: str) -> list[str]:
    """JSONL lines: split at CR LF, LF or a lone CR (old Mac line ends), never at U+2028 and
    kin.

    ``str.splitlines`` also breaks at U+2028, U+0085 and other separators that may stand
    raw inside a JSON string; a raw CR may not (JSON escapes it), so it only ends lines. A
    UTF-8 byte order mark before the first line is dropped.
    """
    return _LINE_END.split(text.removeprefix("\ufeff"))


def decode(data: bytes) -> str:
    """A file's text; bytes that are not UTF-8 become lone surrogates, so only their line
    is bad (``not_utf8``), not the whole file."""
    return data.decode("utf-8", errors="surrogateescape")


def not_utf8(line: str) -> bool:
    """Whether ``decode`` found bytes in this line that are not UTF-8."""
    return _UNDECODED.search(line) is not None


def _load_object(line: str, expected: str) -> dict[str, Any]:
    if not_utf8(line):
        raise ValueError("not valid UTF-8")
    obj = load_json(line)  # NestedTooDeeply is a ValueError: "JSON nested too deeply"
    if not isinstance(obj, dict) or obj.get("type") != expected:
        raise ValueError(f'expected a JSON object with "type": "{expected}"')
    check_keys(obj)
    return {k: v for k, v in obj.items() if k != "type"}


def _parse_header(name: str, lines: list[str]) -> tuple[SessionRecord | None, list[Problem]]:
    try:
        return SessionRecord.model_validate(_load_object(lines[0], "session")), []
    except json.JSONDecodeError as exc:
        reason = f"session line is not valid JSON ({exc.msg})"
    except ValidationError as exc:
        reason = f"bad session line: {describe(exc)}"
    except ValueError as exc:
        reason = f"bad session line: {exc}"
    dropped = sum(1 for line in lines[1:] if line.strip())
    return None, [Problem(name, 1, f"{reason}; file skipped, {dropped} message lines not loaded")]


def parse_transcript(
    name: str, text: str, now: datetime | None = None
) -> tuple[Transcript | None, list[Problem]]:
    """Parse one JSONL transcript; blank lines are ignored, every other bad line reported.

    ``now``: the clock message times are checked against (``storage.kernel.inputs.Moment``);
    None: the real one. A replayed history passes its own.
    """
    context = {"now": now} if now is not None else None
    lines = split_lines(text)
    if not any(line.strip() for line in lines):
        return None, [Problem(name, None, "empty file; skipped")]
    session, problems = _parse_header(name, lines)
    if session is None:
        return None, problems
    messages: dict[str, MessageRecord] = {}
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            obj = _load_object(line, "message")
            message = MessageRecord.model_validate(obj, context=context)
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, lineno, f"not valid JSON ({exc.msg}); line skipped"))
            continue
        except ValidationError as exc:
            problems.append(Problem(name, lineno, f"{describe(exc)}; line skipped"))
            continue
        except ValueError as exc:
            problems.append(Problem(name, lineno, f"{exc}; line skipped"))
            continue
        if message.id in messages:
            reason = f"duplicate message id (first on line {first_line[message.id]})"
            problems.append(Problem(name, lineno, f"{reason}; kept the first"))
            continue
        messages[message.id] = message
        first_line[message.id] = lineno
    return Transcript(name, session, tuple(messages.values())), problems


class JsonlTranscripts:
    """Every ``*.jsonl`` file under an fsspec path (a folder, local or ``s3://``, or one file)."""

    def __init__(self, fs: AbstractFileSystem, root: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")

    def files(self) -> list[str]:
        """The transcript files, sorted; a missing root is an error, not an empty source."""
        if self.fs.isfile(self.root):
            return [self.root]
        if not self.fs.isdir(self.root):
            raise InputError(f"transcripts path {self.root!r} does not exist or is not a folder")
        return sorted(str(p) for p in self.fs.glob(f"{self.root}/**/*.jsonl"))

    def read(self) -> Iterator[Transcript | Problem]:
        for path in self.files():
            try:
                text = decode(self.fs.cat_file(path))
            except OSError as exc:
                yield Problem(path, None, f"unreadable ({exc.__class__.__name__}: {exc}); skipped")
                continue
            transcript, problems = parse_transcript(path, text)
            yield from problems
            if transcript is not None:
                yield transcript


@dataclass
class IngestReport:
    """What a load did: files, sessions and messages stored, and every problem."""

    files: int = 0
    sessions: int = 0
    messages: int = 0
    problems: list[Problem] = field(default_factory=list)
    empty_content: int = 0  # messages stored whose content is empty or white space only
    redactions: dict[str, int] = field(default_factory=dict)  # values replaced before storage

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "sessions": self.sessions,
            "messages": self.messages,
            "bad_input": len(self.problems),
            "empty_content": self.empty_content,
            "redactions": dict(self.redactions),
            "problems": [str(p) for p in self.problems],
        }


def ingest(
    engine: Engine,
    source: SessionSource,
    *,
    batch_size: int = 200,
    dry_run: bool = False,
    on_batch: Callable[[IngestReport], None] | None = None,
) -> IngestReport:
    """Load a source into the raw tables; loading the same input again changes nothing.

    With ``dry_run`` the input is parsed, counted and checked, and nothing is stored.
    """
    report = IngestReport()
    seen: dict[str, str] = {}
    batch: list[Transcript] = []
    for item in source.read():
        if isinstance(item, Problem):
            report.problems.append(item)
            continue
        report.files += 1
        if item.session.id in seen:
            reason = f"its session id was already loaded from {seen[item.session.id]}"
            report.problems.append(Problem(item.source, 1, f"{reason}; file skipped"))
            continue
        seen[item.session.id] = item.source
        batch.append(item)
        if len(batch) >= batch_size:
            _store(None if dry_run else engine, batch, report, on_batch)
            batch = []
    _store(None if dry_run else engine, batch, report, on_batch)
    return report


def _store(
    engine: Engine | None,
    batch: list[Transcript],
    report: IngestReport,
    on_batch: Callable[[IngestReport], None] | None,
) -> None:
    if not batch:
        return
    if engine is not None:
        try:
            batch = _write(engine, batch, report.problems)
        except ROWS_REFUSED:  # one session the database refuses must not sink the others
            batch = [t for t in batch if _write_alone(engine, t, report.problems)]
    report.sessions += len(batch)
    report.messages += sum(len(t.messages) for t in batch)
    report.empty_content += sum(not m.content.strip() for t in batch for m in t.messages)
    if on_batch is not None:
        on_batch(report)


def _write(engine: Engine, batch: list[Transcript], problems: list[Problem]) -> list[Transcript]:
    """Store the batch in one transaction; returns what was stored (problems appended)."""
    found: list[Problem] = []
    with Session(engine) as session, session.begin():
        stored = load_sessions(session, [t.session.id for t in batch])
        kept = []
        for transcript in batch:
            record = stored.get(transcript.session.id)
            if record is not None and record.namespace != transcript.session.namespace:
                reason = "its session id is stored under another namespace"
                found.append(Problem(transcript.source, 1, f"{reason}; file skipped"))
                continue
            record_session(session, transcript.session)
            record_messages(session, transcript.session.id, transcript.messages)
            kept.append(transcript)
    problems.extend(found)  # only once the transaction committed
    return kept


def _write_alone(engine: Engine, transcript: Transcript, problems: list[Problem]) -> bool:
    try:
        return bool(_write(engine, [transcript], problems))
    except ROWS_REFUSED as exc:
        refused = type(getattr(exc, "orig", None) or exc).__name__
        problems.append(
            Problem(transcript.source, None, f"the database refused it ({refused}); file skipped")
        )
        return False
