"""``archivist eval``: retrieval quality on a labelled set, as a table and as JSON.

The eval builds memory in the configured store (that is what it measures), so point it at a
scratch one: ``ARCHIVIST_DATA_DIR=/tmp/archivist-eval archivist db upgrade`` and then
``ARCHIVIST_DATA_DIR=/tmp/archivist-eval archivist eval SESSIONS.jsonl QUERIES.jsonl``.
It refuses to run when a labelled session id is already stored under another namespace,
and when the labelled namespaces hold other data (``--allow-existing`` measures anyway).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from deployments.settings_loader import load_settings
from storage.kernel.errors import ArchivistError
from storage.kernel.scoring import PRESETS, resolve_weights
from storage.kernel.settings import Settings

if TYPE_CHECKING:
    from deployments.progress import Bars
    from tasks.evaluation import (
        BuildReport,
        EvalInputs,
        GoldSession,
        QueryRun,
        QuestionScore,
        SummaryReport,
    )

Echo = Callable[[str], None]
# Labels of the bars the eval draws (``deployments.progress``).
DAYS = "days of memory built"
QUESTIONS = "questions asked"


def _ks(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    return parse_ks(value)


def parse_ks(text: str) -> tuple[int, ...]:
    """``"1,5,10"`` as sorted distinct positive cut-offs."""
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of numbers") from exc
    if not ks or ks[0] < 1:
        raise click.BadParameter(f"{text!r}: give cut-offs of 1 or more, e.g. 1,5,10")
    return tuple(ks)


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


def _weights_of(settings: Settings, preset: str | None) -> tuple[str, dict[str, float]]:
    if preset is None and settings.retrieval.weights:
        return "custom", resolve_weights("custom", settings.retrieval.weights)
    label = preset or settings.retrieval.preset
    return label, resolve_weights(label)


@dataclass(frozen=True)
class LabelledSet:
    """The files an eval reads: sessions, questions, and gold summaries (maybe none)."""

    sessions: Path
    queries: Path
    gold: Sequence[GoldSession] = ()


def run_eval(
    settings: Settings,
    labelled: LabelledSet,
    *,
    preset: str | None,
    ks: Sequence[int],
    allow_existing: bool,
    bars: Bars,
) -> EvalResult:
    """Read the labelled set, build memory the daily sync's way, ask every question, score;
    with ``gold``, score the summaries and facts the build wrote for those sessions too."""
    from storage.retrieval import Retriever
    from tasks.evaluation import (
        build_memory,
        check_namespaces,
        check_scratch,
        load_inputs,
        read_produced,
        run_queries,
        score_question,
        score_summaries,
    )
    from tasks.sync import decode

    sessions, queries, gold = labelled.sessions, labelled.queries, labelled.gold
    inputs = load_inputs(
        (str(sessions), decode(sessions.read_bytes())), (str(queries), decode(queries.read_bytes()))
    )
    retriever = Retriever.from_settings(settings)
    check_namespaces(retriever.engine, inputs.transcripts)
    if not allow_existing:
        check_scratch(retriever.engine, inputs.transcripts)
    build = build_memory(
        retriever.engine,
        inputs.transcripts,
        retriever.embedder,
        settings.tz,
        settings.sync.batch_size,
        on_day=lambda n, total: bars.update(DAYS, n, total),
    )
    label, weights = _weights_of(settings, preset)
    runs = run_queries(
        retriever,
        inputs.queries,
        max(ks),
        weights,
        on_query=lambda n, total: bars.update(QUESTIONS, n, total),
    )
    namespaces = {t.session.id: t.session.namespace for t in inputs.transcripts}
    scores = [score_question(r.query, r.hits, ks, namespaces) for r in runs]
    summaries = None
    if gold:
        produced = read_produced(retriever.engine, [g.session_id for g in gold])
        summaries = score_summaries(gold, inputs.transcripts, produced, retriever.embedder)
    return EvalResult(
        label,
        weights,
        tuple(ks),
        inputs,
        build,
        tuple(runs),
        tuple(scores),
        summaries,
        retriever.embedder.name,
    )


def read_gold_file(path: Path) -> list[GoldSession]:
    """The gold summaries of ``path``; any bad line is an error (the figures would shift)."""
    from tasks.evaluation import read_gold
    from tasks.sync import decode

    gold, problems = read_gold(str(path), decode(path.read_bytes()))
    if problems:
        raise click.ClickException("; ".join(str(p) for p in problems))
    if not gold:
        raise click.ClickException(f"no gold session in {path}")
    return gold


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
    from tasks.evaluation import group_as_dict, summarise, summary_report_as_dict

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
    }


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("eval")
@click.argument("sessions", metavar="SESSIONS.jsonl", type=_FILE)
@click.argument("queries", metavar="QUERIES.jsonl", type=_FILE)
@click.option("--preset", type=click.Choice(sorted(PRESETS)), help="Default: the configured one.")
@click.option(
    "--k", "ks", default="1,5,10", show_default=True, callback=_ks, help="Cut-offs of recall@k."
)
@click.option("--json", "json_path", help="Write the results as JSON to this file ('-': print).")
@click.option(
    "--allow-existing",
    is_flag=True,
    help="Measure even if the labelled namespaces already hold other data.",
)
@click.option(
    "--gold",
    type=_FILE,
    help="Gold summaries and facts (bench/data/eval/gold/summaries.jsonl): also score the "
    "summaries and facts written for those sessions (coverage, ROUGE-1, beside first turns).",
)
def eval_command(
    sessions: Path,
    queries: Path,
    preset: str | None,
    ks: tuple[int, ...],
    json_path: str | None,
    gold: Path | None,
    *,
    allow_existing: bool,
) -> None:
    """Measure retrieval on labelled SESSIONS and QUERIES; writes memory into the store.

    Run it on a scratch store (ARCHIVIST_DATA_DIR=/tmp/archivist-eval): it refuses one
    whose labelled namespaces already hold other data. Evidence messages are named
    "<session_id>:<message_id>".
    """
    from deployments.progress import progress_bars

    gold_sessions = read_gold_file(gold) if gold is not None else []
    try:
        settings = load_settings()
        with progress_bars(enabled=json_path is None) as bars:
            result = run_eval(
                settings,
                LabelledSet(sessions, queries, gold_sessions),
                preset=preset,
                ks=ks,
                allow_existing=allow_existing,
                bars=bars,
            )
    except ArchivistError as exc:
        raise click.ClickException(str(exc)) from exc
    render(result, click.echo)
    if json_path == "-":
        click.echo(json.dumps(as_dict(result), indent=2, ensure_ascii=False))
    elif json_path:
        try:
            Path(json_path).write_text(json.dumps(as_dict(result), indent=2, ensure_ascii=False))
        except OSError as exc:
            raise click.ClickException(
                f"cannot write the JSON results to {json_path}: {exc}"
            ) from exc
        click.echo(f"results written to {json_path}")
