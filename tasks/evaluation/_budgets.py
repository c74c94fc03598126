"""Evidence within a token budget: what an assistant handed N tokens of memory can answer.

For each question, the search's hits (a whole candidate pool, best first) are fitted into
each budget twice (``storage.retrieval.fit``): as passages (what ``search_within`` returns)
and, as the baseline, as whole memories in rank order. Each context is scored by

- **answer recall**: the share of questions with a gold answer (``gold/answers.jsonl``, the
  shortest string that answers, copied from an evidence message) whose context holds that
  string (white space aside);
- **evidence recall**: message-level recall of the evidence messages the context cites
  (``_metrics.cited_messages``: turns and facts by their messages; a session summary
  counts at session level only, as in message recall@k).

Tokens are the local model's (``storage.embedding.count_tokens``), of the whole text an
assistant reads, the ``Sources:`` line included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from storage.embedding import count_tokens
from storage.retrieval import Context, Hit
from storage.retrieval.explain import fit
from tasks.evaluation._metrics import cited_messages
from tasks.evaluation._summaries import gold_lines
from tasks.sync import Problem

BUDGETS = (250, 500, 1000)
ARMS = ("passages", "whole")
Counter = Callable[[Sequence[str]], list[int]]


class GoldAnswer(BaseModel):
    """The shortest string that answers a labelled question (``gold/answers.jsonl``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str = Field(min_length=1, max_length=200)
    part: str = Field(min_length=1, max_length=200)
    answer: str = Field(min_length=1, max_length=2000)


def read_answers(name: str, text: str) -> tuple[dict[str, str], list[Problem]]:
    """Answers by question id, and a problem for every bad or repeated line."""
    answers: dict[str, str] = {}
    problems: list[Problem] = []
    for lineno, item in gold_lines(name, text, GoldAnswer, problems):
        if item.question_id in answers:
            problems.append(Problem(name, lineno, f"repeated question {item.question_id!r}"))
            continue
        answers[item.question_id] = item.answer
    return answers, problems


@dataclass(frozen=True)
class BudgetCell:
    """One budget, one arm: answer recall (None without gold answers), evidence recall
    (None without evidence messages), mean tokens used, and the questions behind each."""

    answer_recall: float | None
    answered_of: int
    evidence_recall: float | None
    evidence_of: int
    mean_tokens: float


BudgetReport = dict[int, dict[str, BudgetCell]]  # budget -> arm -> cell


def holds(context: Context, answer: str) -> bool:
    """Whether the context's passages hold the answer (white space aside)."""
    wanted = " ".join(answer.split())
    return any(wanted in c.line for c in context.citations)


def score_budgets(
    runs: Sequence[tuple[str, Sequence[str], Sequence[Hit]]],
    answers: Mapping[str, str],
    budgets: Sequence[int] = BUDGETS,
    count: Counter | None = None,
) -> BudgetReport:
    """Each budget and arm over ``runs``: (question id, evidence message ids, hits)."""
    count = counted_once(count or count_tokens)
    report: BudgetReport = {}
    for budget in budgets:
        report[budget] = {}
        for arm in ARMS:
            found: list[bool] = []
            recalls: list[float] = []
            tokens: list[int] = []
            for qid, evidence, hits in runs:
                context = fit(hits, budget, whole=arm == "whole", count=count)
                tokens.append(context.tokens_used)
                if qid in answers:
                    found.append(holds(context, answers[qid]))
                if evidence:
                    cited = frozenset().union(*(cited_messages(h) for h in context.hits))
                    recalls.append(len(cited & set(evidence)) / len(set(evidence)))
            report[budget][arm] = BudgetCell(
                sum(found) / len(found) if found else None,
                len(found),
                sum(recalls) / len(recalls) if recalls else None,
                len(recalls),
                sum(tokens) / len(tokens) if tokens else 0.0,
            )
    return report


def counted_once(count: Counter) -> Counter:
    """``count`` that counts each distinct text once and then recalls it: every budget fits
    the same hits again, and each fit counts the lines and sources of the whole pool. A
    text's count is the same each time; ``archivist eval`` of the test set counted 8,791
    texts in 1,519 calls, 0.41 s of its 0.69 s of CPU."""
    known: dict[str, int] = {}

    def counted(texts: Sequence[str]) -> list[int]:
        new = list(dict.fromkeys(t for t in texts if t not in known))
        if new:
            known.update(zip(new, count(new), strict=True))
        return [known[t] for t in texts]

    return counted


def render_budgets(report: BudgetReport) -> str:
    """One line per budget: answer and evidence recall of passages, then of whole memories."""
    lines = [
        f"{'budget':>8}  {'answer: passages':>16} {'whole':>7}  "
        f"{'evidence: passages':>18} {'whole':>7}  {'tokens: passages':>16} {'whole':>7}"
    ]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    for budget, arms in report.items():
        p, w = arms["passages"], arms["whole"]
        lines.append(
            f"{budget:>8}  {cell(p.answer_recall):>16} {cell(w.answer_recall):>7}  "
            f"{cell(p.evidence_recall):>18} {cell(w.evidence_recall):>7}  "
            f"{p.mean_tokens:>16.0f} {w.mean_tokens:>7.0f}"
        )
    first = next(iter(report.values()), {}).get("passages")
    if first is not None:
        lines.append(
            f"({first.answered_of} questions with a gold answer, {first.evidence_of} with "
            "evidence messages; tokens of the local model)"
        )
    return "\n".join(lines)


def budgets_as_dict(report: BudgetReport) -> dict[str, dict[str, dict[str, float | int | None]]]:
    return {
        str(budget): {arm: dict(cell.__dict__) for arm, cell in arms.items()}
        for budget, arms in report.items()
    }
