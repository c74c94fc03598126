"""Summary quality against hand-written gold: fact coverage and ROUGE-1, beside a baseline.

GOLD is one JSON line per session (``bench/data/eval/gold/README.md``): the session's id,
a summary a person wrote and the atomic facts worth remembering. For each gold session
Archivist produced an episode summary and extracted facts; they are scored as:

- **coverage**: the share of gold facts with a sentence of the text at cosine >= 0.6
  (vectors from the embedder given; the issue's figures use all-MiniLM-L6-v2). Counted over
  all gold facts (micro), for the summary, for the extracted facts, and for the baseline;
- **ROUGE-1** recall and precision of the summary against the gold summary: unigram
  overlap of case-folded words, each CJK character a word of its own; macro over sessions;
- the **baseline**: the session's first turns ("Speaker: text", in order) cut to the
  summary's own length, so a summary is compared with what reading the start would give.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from storage.kernel.inputs import describe
from tasks.sync import Problem, Transcript, not_utf8, split_lines

COVERAGE_COSINE = 0.6
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
# Sentence ends (a period before a space or the end, CJK marks), bullets and line breaks.
_PIECE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\s*[•\n]\s*")


M = TypeVar("M", bound=BaseModel)


class Vectors(Protocol):
    """What coverage needs of an embedder (``storage.embedding.Embedder`` has it)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class GoldSession(BaseModel):
    """One session's hand-written summary and facts."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    session_id: str = Field(min_length=1, max_length=200)
    part: str = ""
    language: str = ""
    summary: str = Field(min_length=1, max_length=5_000)
    facts: tuple[str, ...] = Field(min_length=1, max_length=100)


def gold_lines(
    name: str, text: str, model: type[M], problems: list[Problem]
) -> Iterator[tuple[int, M]]:
    """Each valid line of a gold JSONL file as ``model``, with its number; a problem added to
    ``problems`` for every other non-blank line (not UTF-8, or not a ``model``)."""
    for lineno, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        if not_utf8(line):
            problems.append(Problem(name, lineno, "not valid UTF-8; line skipped"))
            continue
        try:
            item = model.model_validate_json(line)
        except ValidationError as exc:
            problems.append(Problem(name, lineno, f"{describe(exc)}; line skipped"))
            continue
        yield lineno, item


def read_gold(name: str, text: str) -> tuple[list[GoldSession], list[Problem]]:
    """Valid gold sessions, and a problem for every bad or repeated line."""
    gold: list[GoldSession] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for lineno, item in gold_lines(name, text, GoldSession, problems):
        if item.session_id in seen:
            problems.append(Problem(name, lineno, f"repeated session {item.session_id!r}; skipped"))
            continue
        seen.add(item.session_id)
        gold.append(item)
    return gold, problems


def words(text: str) -> list[str]:
    """Case-folded words; each CJK character counts as one (those scripts have no spaces)."""
    return _WORD.findall(text.casefold())


def rouge1(candidate: str, reference: str) -> tuple[float, float]:
    """(recall, precision) of candidate's unigrams against reference's, clipped counts."""
    cand, ref = Counter(words(candidate)), Counter(words(reference))
    overlap = sum((cand & ref).values())
    recall = overlap / sum(ref.values()) if ref else 0.0
    precision = overlap / sum(cand.values()) if cand else 0.0
    return recall, precision


def pieces(text: str) -> list[str]:
    """The sentences (and bullets, and lines) of a text, blanks dropped."""
    return [p.strip() for p in _PIECE_END.split(text) if p and p.strip()]


def first_turns(transcript: Transcript, chars: int) -> str:
    """The session's spoken turns from the start, cut at a word to at most ``chars``."""
    text = " ".join(
        f"{m.speaker}: {' '.join(m.content.split())}"
        for m in transcript.messages
        if m.role in ("user", "assistant") and m.content.strip()
    )
    if len(text) <= chars:
        return text
    cut = text[:chars]
    space = cut.rfind(" ")
    return cut[:space] if space > chars // 2 else cut


def covered(facts: Sequence[str], texts: Sequence[str], embedder: Vectors) -> list[bool]:
    """Per gold fact: does any of ``texts`` reach ``COVERAGE_COSINE`` with it?"""
    if not facts:
        return []
    if not texts:
        return [False] * len(facts)
    vectors = embedder.embed([*facts, *texts])
    sims = vectors[: len(facts)] @ vectors[len(facts) :].T
    return [bool(best >= COVERAGE_COSINE) for best in sims.max(axis=1)]


@dataclass(frozen=True)
class SessionScore:
    """One gold session's figures: facts covered by each text, ROUGE-1 of each summary."""

    session_id: str
    language: str
    facts: int
    summary_chars: int
    by_summary: int
    by_facts: int
    by_baseline: int
    rouge: tuple[float, float]
    baseline_rouge: tuple[float, float]


def score_session(
    gold: GoldSession,
    transcript: Transcript,
    produced: tuple[str, Sequence[str]],
    embedder: Vectors,
) -> SessionScore:
    """Scores of one session's ``(summary, extracted facts)`` against its gold."""
    summary, facts = produced
    baseline = first_turns(transcript, len(summary))
    return SessionScore(
        session_id=gold.session_id,
        language=gold.language,
        facts=len(gold.facts),
        summary_chars=len(summary),
        by_summary=sum(covered(gold.facts, pieces(summary), embedder)),
        by_facts=sum(covered(gold.facts, list(facts), embedder)),
        by_baseline=sum(covered(gold.facts, pieces(baseline), embedder)),
        rouge=rouge1(summary, gold.summary),
        baseline_rouge=rouge1(baseline, gold.summary),
    )


@dataclass(frozen=True)
class SummaryReport:
    """Figures over a group of gold sessions."""

    sessions: int
    facts: int
    mean_chars: float
    max_chars: int
    coverage_summary: float
    coverage_facts: float
    coverage_baseline: float
    rouge_recall: float
    rouge_precision: float
    baseline_recall: float
    baseline_precision: float
    missing: tuple[str, ...] = field(default=())


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def report(scores: Sequence[SessionScore], missing: Sequence[str] = ()) -> SummaryReport:
    """Coverage over all gold facts of the group; ROUGE-1 and length averaged per session."""
    facts = sum(s.facts for s in scores)
    return SummaryReport(
        sessions=len(scores),
        facts=facts,
        mean_chars=_mean([s.summary_chars for s in scores]),
        max_chars=max((s.summary_chars for s in scores), default=0),
        coverage_summary=sum(s.by_summary for s in scores) / facts if facts else 0.0,
        coverage_facts=sum(s.by_facts for s in scores) / facts if facts else 0.0,
        coverage_baseline=sum(s.by_baseline for s in scores) / facts if facts else 0.0,
        rouge_recall=_mean([s.rouge[0] for s in scores]),
        rouge_precision=_mean([s.rouge[1] for s in scores]),
        baseline_recall=_mean([s.baseline_rouge[0] for s in scores]),
        baseline_precision=_mean([s.baseline_rouge[1] for s in scores]),
        missing=tuple(missing),
    )


def score_summaries(
    gold: Sequence[GoldSession],
    transcripts: Sequence[Transcript],
    produced: Mapping[str, tuple[str, Sequence[str]]],
    embedder: Vectors,
) -> dict[str, SummaryReport]:
    """A report per language (sorted) and ``overall``; gold sessions absent from the
    transcripts or without a summary are listed as missing, not scored."""
    by_id = {t.session.id: t for t in transcripts}
    scores: list[SessionScore] = []
    missing: list[str] = []
    for item in gold:
        if item.session_id not in by_id or item.session_id not in produced:
            missing.append(item.session_id)
            continue
        scores.append(
            score_session(item, by_id[item.session_id], produced[item.session_id], embedder)
        )
    languages = sorted({s.language for s in scores if s.language})
    out = {lang: report([s for s in scores if s.language == lang]) for lang in languages}
    out["overall"] = report(scores, missing)
    return out


def summary_report_as_dict(group: SummaryReport) -> dict[str, Any]:
    """JSON form of one group's figures."""
    return {
        "sessions": group.sessions,
        "gold_facts": group.facts,
        "summary_chars": {"mean": round(group.mean_chars, 1), "max": group.max_chars},
        "coverage": {
            "summary": round(group.coverage_summary, 4),
            "facts": round(group.coverage_facts, 4),
            "first_turns": round(group.coverage_baseline, 4),
        },
        "rouge1": {
            "summary": {
                "recall": round(group.rouge_recall, 4),
                "precision": round(group.rouge_precision, 4),
            },
            "first_turns": {
                "recall": round(group.baseline_recall, 4),
                "precision": round(group.baseline_precision, 4),
            },
        },
        "missing": list(group.missing),
    }


def render_summary_table(groups: Mapping[str, SummaryReport]) -> str:
    """Fixed-width table: per group, coverage (summary, facts, first turns) and ROUGE-1."""
    head = (
        f"{'group':<10}{'sess':>5}{'facts':>6}{'chars':>7}   "
        f"{'cover: summary':>14}{'facts':>7}{'first':>7}   "
        f"{'R1 recall':>9}{'first':>7}   {'R1 prec':>7}{'first':>7}"
    )
    lines = [head]
    for name, g in groups.items():
        if name == "overall":
            lines.append("-" * len(head))
        lines.append(
            f"{name:<10}{g.sessions:>5}{g.facts:>6}{g.mean_chars:>7.0f}   "
            f"{g.coverage_summary:>14.3f}{g.coverage_facts:>7.3f}{g.coverage_baseline:>7.3f}   "
            f"{g.rouge_recall:>9.3f}{g.baseline_recall:>7.3f}   "
            f"{g.rouge_precision:>7.3f}{g.baseline_precision:>7.3f}"
        )
    return "\n".join(lines)
