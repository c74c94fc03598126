"""What ``archivist eval`` shows: its result, as a table (``render``) and as JSON (``as_dict``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.evaluation import (
        BudgetReport,
        BuildReport,
        EvalInputs,
        QueryRun,
        QuestionScore,
        SummaryReport,
    )

Echo = Callable[[str], None]


@dataclass(frozen=True)
class EvalResult:
    """Everything one eval produced: inputs, how memory was built, hits and scores."""

    preset: str
    weights: dict[str, float]
    ks: tuple[int, ...]
    inputs: EvalInputs
    build: BuildReport
    runs: tuple[QueryRun, ...]
    scores: tuple[QuestionScore, ...]
    # Per language and overall, when gold summaries were given (``--gold``).
    summaries: dict[str, SummaryReport] | None = None
    embedder: str = ""
    # Answer and evidence recall within token budgets, passages against whole memories.
    budgets: BudgetReport | None = None


def _weights(result: EvalResult) -> str:
    return ", ".join(f"{name}={value:g}" for name, value in result.weights.items() if value)


def _timings(result: EvalResult) -> dict[str, float]:
    from tasks.evaluation import percentile

    ms = [r.ms for r in result.runs]
    return {"p50": round(percentile(ms, 50), 2), "p95": round(percentile(ms, 95), 2)}


def render(result: EvalResult, echo: Echo) -> None:
    """Problems, how memory was built, the table, leaks and timings."""
    from tasks.evaluation import OVERALL, render_table, summarise

    inputs, build = result.inputs, result.build
    for problem in inputs.problems:
        echo(f"  bad input: {problem}")
    echo(
        f"labelled set: {len(inputs.transcripts)} sessions, {build.messages} messages, "
        f"{len(inputs.queries)} questions; {len(inputs.problems)} problems"
    )
    echo(
        f"memory built with the daily sync's steps, as of the end of each of {build.days} days "
        f"with messages, min_user_messages=1 (short sessions are kept), no memory files: "
        f"{build.written.sessions} session states written, "
        f"{build.written.memories_added} memories added"
        + (" (the store already held them)" if not build.written.sessions else "")
    )
    if build.without_memory:
        without = ", ".join(build.without_memory)
        echo(f"  sessions without memory (no user or assistant text): {without}")
    summary = summarise(result.scores, result.ks)
    echo(f"preset {result.preset} ({_weights(result)}); recall@k for k = {list(result.ks)}")
    echo(render_table(summary, result.ks))
    overall = summary[OVERALL]
    echo(
        f"cross-namespace leaks: {overall.leaks} in {sum(s.hits for s in result.scores)} hits; "
        f"unanswerable questions (no evidence): {overall.unanswerable}, "
        f"{overall.abstained} of them got no hit, or only low-confidence ones"
    )
    timing = _timings(result)
    echo(f"timing: p50 {timing['p50']:.1f} ms, p95 {timing['p95']:.1f} ms per query")
    if result.budgets is not None:
        from tasks.evaluation import render_budgets

        echo(
            "within a token budget (the hits of a pool of 50, fitted as passages and, as the "
            "baseline, as whole memories in rank order): answer recall (gold answer in the "
            "context), evidence recall (evidence messages cited), mean tokens used"
        )
        echo(render_budgets(result.budgets))
    if result.summaries is not None:
        _render_summaries(result, echo)


def _render_summaries(result: EvalResult, echo: Echo) -> None:
    from tasks.evaluation import render_summary_table

    assert result.summaries is not None
    echo(
        "summaries against the gold: share of gold facts with a sentence at cosine >= 0.6 "
        f"({result.embedder}) in the summary, the extracted facts and the session's first turns "
        "of the summary's length; ROUGE-1 recall and precision of the summary and of those turns"
    )
    echo(render_summary_table(result.summaries))
    missing = result.summaries["overall"].missing
    if missing:
        echo(f"  gold sessions without a summary in this set: {', '.join(missing)}")


def _question(result: EvalResult, index: int) -> dict[str, Any]:
    from tasks.evaluation import level_as_dict

    run, score = result.runs[index], result.scores[index]
    hits = [
        {
            "memory_id": h.memory_id,
            "kind": h.kind,
            "session_id": h.session_id,
            "message_ids": list(h.message_ids),
            "score": round(h.score, 4),
        }
        for h in run.hits
    ]
    return {
        "id": score.id,
        "category": score.category,
        "namespace": run.query.namespace,
        "asked_at": run.query.asked_at.isoformat(),
        "ms": round(run.ms, 2),
        "messages": level_as_dict(score.messages),
        "sessions": level_as_dict(score.sessions),
        "distinct_sessions": level_as_dict(score.distinct),
        "cross_namespace_leaks": score.leaks,
        "hits": hits,
    }


def as_dict(result: EvalResult) -> dict[str, Any]:
    """The JSON form: summary per category and overall, timings, build, problems, questions."""
    from tasks.evaluation import budgets_as_dict, group_as_dict, summarise, summary_report_as_dict

    summary = summarise(result.scores, result.ks)
    build = result.build
    summaries = (
        {name: summary_report_as_dict(g) for name, g in result.summaries.items()}
        if result.summaries is not None
        else None
    )
    return {
        "preset": result.preset,
        "weights": {name: value for name, value in result.weights.items() if value},
        "ks": list(result.ks),
        "summary": {name: group_as_dict(group) for name, group in summary.items()},
        "timing_ms": _timings(result),
        "build": {
            "sessions": build.sessions,
            "messages": build.messages,
            "days": build.days,
            "min_user_messages": 1,
            "memories_added": build.written.memories_added,
            "sessions_without_memory": build.without_memory,
        },
        "problems": [str(p) for p in result.inputs.problems],
        "questions": [_question(result, i) for i in range(len(result.runs))],
        **({"summaries": summaries, "summaries_embedder": result.embedder} if summaries else {}),
        **({"budgets": budgets_as_dict(result.budgets)} if result.budgets is not None else {}),
    }
