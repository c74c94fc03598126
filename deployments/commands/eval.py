"""``archivist eval``: retrieval quality on a labelled set, as a table and as JSON.

The eval builds memory in the configured store (that is what it measures), so point it at a
scratch one: ``ARCHIVIST_DATA_DIR=/tmp/archivist-eval archivist db upgrade`` and then
``ARCHIVIST_DATA_DIR=/tmp/archivist-eval archivist eval SESSIONS.jsonl QUERIES.jsonl``.
It refuses to run when a labelled session id is already stored under another namespace,
and when the labelled namespaces hold other data (``--allow-existing`` measures anyway).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from deployments.commands.eval_report import EvalResult, as_dict, render
from deployments.settings_loader import load_settings
from storage.kernel.errors import ArchivistError
from storage.kernel.scoring import PRESETS, resolve_weights
from storage.kernel.settings import Settings

if TYPE_CHECKING:
    from deployments.progress import Bars
    from tasks.evaluation import (
        GoldSession,
    )

POOL = 50  # hits a budgeted search chooses from (storage.retrieval's POOL_HITS)
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


def _weights_of(settings: Settings, preset: str | None) -> tuple[str, dict[str, float]]:
    if preset is None and settings.retrieval.weights:
        return "custom", resolve_weights("custom", settings.retrieval.weights)
    label = preset or settings.retrieval.preset
    return label, resolve_weights(label)


@dataclass(frozen=True)
class LabelledSet:
    """The files an eval reads: sessions, questions, gold summaries and answers (maybe
    none), and the token budgets to measure (none: no such figures)."""

    sessions: Path
    queries: Path
    gold: Sequence[GoldSession] = ()
    answers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    budgets: tuple[int, ...] = ()


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
        score_budgets,
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
        turn_context=settings.embedding.turn_context,
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
    budgets = None
    if labelled.budgets:
        pooled = run_queries(retriever, inputs.queries, POOL, weights)
        triples = [(r.query.id, r.query.evidence_message_ids, r.hits) for r in pooled]
        budgets = score_budgets(triples, labelled.answers, labelled.budgets)
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
        budgets,
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


def read_answers_file(path: Path) -> dict[str, str]:
    """The gold answers of ``path`` by question id; any bad line is an error."""
    from tasks.evaluation import read_answers
    from tasks.sync import decode

    answers, problems = read_answers(str(path), decode(path.read_bytes()))
    if problems:
        raise click.ClickException("; ".join(str(p) for p in problems))
    return answers


def _budgets(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    from storage.kernel.inputs import token_budget

    try:
        return tuple(sorted({token_budget(int(p)) for p in value.split(",") if p.strip()}))
    except ValueError as exc:
        raise click.BadParameter(f"{value!r}: {exc}") from None


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
@click.option(
    "--answers",
    type=_FILE,
    help="Gold answers (bench/data/eval/gold/answers.jsonl): answer recall within budgets.",
)
@click.option(
    "--budgets",
    default="250,500,1000",
    show_default=True,
    callback=_budgets,
    help="Token budgets: evidence recall of passages and of whole memories fitted into each "
    "('': none).",
)
def eval_command(  # noqa: PLR0913 (click hands each option over as its own parameter)
    sessions: Path,
    queries: Path,
    preset: str | None,
    ks: tuple[int, ...],
    json_path: str | None,
    gold: Path | None,
    answers: Path | None,
    budgets: tuple[int, ...],
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
    gold_answers = read_answers_file(answers) if answers is not None else {}
    try:
        settings = load_settings()
        with progress_bars(enabled=json_path is None) as bars:
            result = run_eval(
                settings,
                LabelledSet(sessions, queries, gold_sessions, gold_answers, budgets),
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
