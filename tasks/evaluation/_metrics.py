"""Retrieval-quality metrics of ``archivist eval``: pure functions over hits and evidence.

Evidence messages are named ``"<session_id>:<message_id>"``, because message ids are only
unique within their session.

- message level: a hit covers the evidence messages it cites (its ``message_ids``, qualified
  by its ``session_id``), except ``episode`` and ``task_card`` hits, which summarise a whole
  session and count only at session level;
- session level: a hit covers its ``session_id``;
- distinct-session level: the sessions of the hits, deduplicated in rank order, so that
  recall@k counts k different sessions however many hits one session has;
- recall@k = |evidence covered by the top k hits| / |evidence|;
- MRR = 1 / rank of the first hit covering any evidence, 0 if none.

Averages are macro (every question weighs the same). A question without evidence at a
level is left out of that level's averages; every question is checked for leaks: hits
from a namespace other than the one asked. A question with no evidence at all is
unanswerable: it *abstains* when search returns no hit for it, or only hits marked
low-confidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

SESSION_LEVEL_KINDS = frozenset({"episode", "task_card"})
OVERALL = "overall"


class Cited(Protocol):
    """What a metric needs of a hit (``storage.retrieval.Hit`` has it)."""

    @property
    def namespace(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def message_ids(self) -> tuple[str, ...]: ...

    @property
    def low_confidence(self) -> bool: ...


class Labelled(Protocol):
    """What a metric needs of a question (``_inputs.EvalQuery`` has it)."""

    @property
    def id(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def category(self) -> str: ...

    @property
    def evidence_message_ids(self) -> Sequence[str]: ...

    @property
    def evidence_session_ids(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class LevelScore:
    """Recall at each k and reciprocal rank of one question at one level."""

    recall: dict[int, float]
    reciprocal_rank: float


@dataclass(frozen=True)
class QuestionScore:
    """How one question fared; a level is None when the question has no evidence there."""

    id: str
    category: str
    messages: LevelScore | None
    sessions: LevelScore | None
    distinct: LevelScore | None
    hits: int
    leaks: int
    confident_hits: int = 0

    @property
    def unanswerable(self) -> bool:
        return self.messages is None and self.sessions is None


@dataclass(frozen=True)
class LevelSummary:
    """Macro averages of one level over the questions that have evidence there."""

    questions: int
    recall: dict[int, float]
    mrr: float


@dataclass(frozen=True)
class GroupSummary:
    """One category (or all questions): counts, both levels and leaks."""

    questions: int
    messages: LevelSummary | None
    sessions: LevelSummary | None
    distinct: LevelSummary | None
    leaks: int
    unanswerable: int = 0
    abstained: int = 0


def cited_messages(hit: Cited) -> frozenset[str]:
    """Qualified ids of the messages a hit covers; none for session-level kinds."""
    if hit.kind in SESSION_LEVEL_KINDS or hit.session_id is None:
        return frozenset()
    return frozenset(f"{hit.session_id}:{mid}" for mid in hit.message_ids)


def cited_sessions(hit: Cited) -> frozenset[str]:
    """The session a hit comes from, if any."""
    return frozenset() if hit.session_id is None else frozenset({hit.session_id})


def distinct_sessions(cited: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """The hits' sessions in rank order, each once (hits without a session left out)."""
    seen = dict.fromkeys(sid for ids in cited for sid in sorted(ids))
    return [frozenset({sid}) for sid in seen]


def recall_at(cited: Sequence[frozenset[str]], evidence: frozenset[str], k: int) -> float:
    """Share of the evidence covered by the first k hits."""
    covered: set[str] = set()
    for ids in cited[:k]:
        covered |= ids & evidence
    return len(covered) / len(evidence)


def reciprocal_rank(cited: Sequence[frozenset[str]], evidence: frozenset[str]) -> float:
    """1 / rank of the first hit covering any evidence; 0 if none does."""
    for rank, ids in enumerate(cited, start=1):
        if ids & evidence:
            return 1.0 / rank
    return 0.0


def score_level(
    cited: Sequence[frozenset[str]], evidence: frozenset[str], ks: Sequence[int]
) -> LevelScore | None:
    """Recall at each k and reciprocal rank; None without evidence."""
    if not evidence:
        return None
    return LevelScore(
        {k: recall_at(cited, evidence, k) for k in ks}, reciprocal_rank(cited, evidence)
    )


def count_leaks(
    hits: Sequence[Cited], namespace: str, session_namespaces: Mapping[str, str]
) -> int:
    """Hits from another namespace, by their own label or by the session they cite."""
    return sum(
        hit.namespace != namespace
        or session_namespaces.get(hit.session_id or "", namespace) != namespace
        for hit in hits
    )


def score_question(
    question: Labelled,
    hits: Sequence[Cited],
    ks: Sequence[int],
    session_namespaces: Mapping[str, str],
) -> QuestionScore:
    """Recall and reciprocal rank at both levels, and leaks, of one question's hits."""
    messages = frozenset(question.evidence_message_ids)
    sessions = frozenset(question.evidence_session_ids)
    by_session = [cited_sessions(h) for h in hits]
    return QuestionScore(
        id=question.id,
        category=question.category,
        messages=score_level([cited_messages(h) for h in hits], messages, ks),
        sessions=score_level(by_session, sessions, ks),
        distinct=score_level(distinct_sessions(by_session), sessions, ks),
        hits=len(hits),
        leaks=count_leaks(hits, question.namespace, session_namespaces),
        confident_hits=sum(not h.low_confidence for h in hits),
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _summarise_level(scores: Sequence[LevelScore | None], ks: Sequence[int]) -> LevelSummary | None:
    present = [s for s in scores if s is not None]
    if not present:
        return None
    recall = {k: _mean([s.recall[k] for s in present]) for k in ks}
    return LevelSummary(len(present), recall, _mean([s.reciprocal_rank for s in present]))


def _summarise_group(scores: Sequence[QuestionScore], ks: Sequence[int]) -> GroupSummary:
    return GroupSummary(
        questions=len(scores),
        messages=_summarise_level([s.messages for s in scores], ks),
        sessions=_summarise_level([s.sessions for s in scores], ks),
        distinct=_summarise_level([s.distinct for s in scores], ks),
        leaks=sum(s.leaks for s in scores),
        unanswerable=sum(s.unanswerable for s in scores),
        abstained=sum(s.unanswerable and s.confident_hits == 0 for s in scores),
    )


def summarise(scores: Sequence[QuestionScore], ks: Sequence[int]) -> dict[str, GroupSummary]:
    """One summary per category (sorted by name), then ``overall``."""
    categories = sorted({s.category for s in scores})
    out = {c: _summarise_group([s for s in scores if s.category == c], ks) for c in categories}
    out[OVERALL] = _summarise_group(scores, ks)
    return out


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in [0, 100]); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def level_as_dict(level: LevelSummary | LevelScore | None) -> dict[str, Any] | None:
    """JSON form of one level: ``recall@k`` keys, then ``mrr`` (and ``questions``)."""
    if level is None:
        return None
    out: dict[str, Any] = {f"recall@{k}": round(v, 4) for k, v in level.recall.items()}
    if isinstance(level, LevelSummary):
        return {"questions": level.questions, **out, "mrr": round(level.mrr, 4)}
    return {**out, "reciprocal_rank": round(level.reciprocal_rank, 4)}


def group_as_dict(group: GroupSummary) -> dict[str, Any]:
    """JSON form of a category's summary."""
    return {
        "questions": group.questions,
        "messages": level_as_dict(group.messages),
        "sessions": level_as_dict(group.sessions),
        "distinct_sessions": level_as_dict(group.distinct),
        "cross_namespace_leaks": group.leaks,
        "unanswerable": group.unanswerable,
        "abstained": group.abstained,
    }


def _cells(level: LevelSummary | None, ks: Sequence[int]) -> list[str]:
    if level is None:
        return [f"{'-':>4}"] + [f"{'-':>6}"] * (len(ks) + 1)
    values = [*(level.recall[k] for k in ks), level.mrr]
    return [f"{level.questions:>4}"] + [f"{v:>6.3f}" for v in values]


def render_table(summary: Mapping[str, GroupSummary], ks: Sequence[int]) -> str:
    """Fixed-width table per category and overall: message, session and distinct-session
    levels, leaks, and how many unanswerable questions got no confident hit."""
    names = [*(f"R@{k}" for k in ks), "MRR"]
    level_head = f"{'n':>4}" + "".join(f"{n:>7}" for n in names)
    width = len(level_head)
    heads = ("messages", "sessions", "distinct sessions")
    lines = [
        f"{'':<24}{'':>5}   " + "   ".join(f"{h:<{width}}" for h in heads),
        f"{'category':<24}{'n':>5}   "
        + "   ".join([level_head] * 3)
        + f"   {'leaks':>5}   {'abstained':>9}",
    ]
    for name, group in summary.items():
        if name == OVERALL:
            lines.append("-" * len(lines[1]))
        levels = "   ".join(
            " ".join(_cells(level, ks))
            for level in (group.messages, group.sessions, group.distinct)
        )
        abstained = f"{group.abstained}/{group.unanswerable}" if group.unanswerable else "-"
        lines.append(
            f"{name:<24}{group.questions:>5}   {levels}   {group.leaks:>5}   {abstained:>9}"
        )
    return "\n".join(lines)
