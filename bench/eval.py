"""Retrieval quality on the large labelled set: each embedder, each preset, relevance only.

    .venv/bin/python bench/eval.py [--set bench/data/eval] [--embedders hashing,local]
        [--rankings archivist,librarian,relevance] [--haystack 20] [--workdir DIR]
        [--parts a,b] [--held-out] [--json PATH] [--gold PATH] [--summaries-only]

The set is every ``sessions.jsonl`` and ``queries.jsonl`` under ``--set`` (its parts are
read together), but the held-out parts (folders ending ``-heldout``): those are measured
alone, with ``--held-out``, once a piece of work is done, so nothing is tuned to them.
For each embedder, memory is built the daily sync's way in a fresh
embedded store (``tasks.evaluation.build_memory``, as ``archivist eval`` does), then every
question is asked as of its time with each ranking. Per category it prints message
recall@10, distinct-session recall@5 and message MRR, and how many unanswerable questions
got no hit; then the same by the age of the evidence when asked and by the question's
script (written without spaces between words, as Japanese, or with them). ``--workdir``
keeps the stores, so a rerun skips the build (it is idempotent).

``--haystack N`` adds N synthetic sessions of 12 messages to each labelled namespace,
spread over the two months before its last message (``tasks.samples.generate_bulk``:
plans, reviews, budgets and flights of made-up people, never a labelled answer), so that
the evidence has to be found among a few hundred memories, as in real use, rather than
among a dozen. 0 measures the labelled sessions alone.

Summaries are scored too, against the hand-written gold of ``--gold`` (default
``bench/data/eval/gold/summaries.jsonl``; ``--gold ''`` skips it): for each gold session the
episode summary and the facts the build wrote, as coverage of the gold facts (a sentence
at cosine >= 0.6, always with all-MiniLM-L6-v2 whatever the embedder under test) and
ROUGE-1 recall and precision against the gold summary, each beside the session's first
turns cut to the summary's length (``tasks.evaluation.score_summaries``).
``--summaries-only`` skips the store and the questions: it extracts each gold session
directly (what the build ends with) and prints those figures alone, in seconds.

Context within a token budget (``tasks.evaluation.score_budgets``): with the first ranking,
each question's hits (a whole pool of 50) are fitted into 250, 500 and 1,000 tokens of the
local model (``--budgets``) as passages and, as the baseline, as whole memories in rank
order; it prints answer recall (the gold answer of ``--answers``, default
``bench/data/eval/gold/answers.jsonl``, inside the context) and evidence recall (evidence
messages the context cites) of each, and the tokens used.

An embedder is ``provider[:stored[:queries]]``: the local model's weights for the stored
vectors and for the queries, ``float32`` or ``int8`` (``ARCHIVIST_EMBEDDING__STORE_ENCODER``
and ``__QUERY_ENCODER``; left out: the defaults). ``local:int8:float32`` measures int8
memories searched with float32 queries; specs that store alike share one store.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module (which psycopg imports); the package is installed.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import atexit
import dataclasses
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.sync import Transcript

RANKINGS: dict[str, dict[str, float] | None] = {
    "archivist": None,  # the preset's weights
    "librarian": None,
    "relevance": {"semantic": 1.0},
}


HELD_OUT = "-heldout"  # parts measured only at the end of a piece of work (--held-out)
SUMMARIES = "summaries"  # the key of the summary figures beside the rankings
BUDGETED = "budgets"  # the key of the figures within token budgets
POOL = 50  # hits a budgeted search chooses from (storage.retrieval's POOL_HITS)


def read_set(
    root: Path, *, held_out: bool = False, parts: Sequence[str] = ()
) -> tuple[tuple[str, str], tuple[str, str]]:
    """The parts' sessions and queries, concatenated in path order: every part but the
    held-out ones; with ``held_out`` the held-out ones alone; ``parts``: only those named."""
    found = {}
    for name in ("sessions.jsonl", "queries.jsonl"):
        files = [
            f
            for f in sorted(root.rglob(name))
            if f.parent.name.endswith(HELD_OUT) == held_out
            and (not parts or f.parent.name in parts)
        ]
        if not files:
            raise SystemExit(f"no {name} under {root}")
        text = "".join(f.read_text("utf-8").rstrip("\n") + "\n" for f in files)
        found[name] = (f"{root}/**/{name}", text)
    return found["sessions.jsonl"], found["queries.jsonl"]


def haystack(transcripts: Sequence[Transcript], per_namespace: int) -> list[Transcript]:
    """Synthetic sessions for each labelled namespace, over the two months before its end."""
    from tasks.samples import generate_bulk
    from tasks.sync import Transcript

    spans: dict[str, list[datetime]] = {}
    for t in transcripts:
        spans.setdefault(t.session.namespace, []).extend(m.timestamp for m in t.messages)
    out: list[Transcript] = []
    for number, (namespace, times) in enumerate(sorted(spans.items())):
        end = max(times)
        bulk = generate_bulk(
            per_namespace, 12, start=end - timedelta(days=60), end=end, namespaces=1, seed=number
        )
        for index, (session, messages) in enumerate(bulk):
            renamed = session.model_copy(
                update={"id": f"hay-{namespace}-{index}", "namespace": namespace}
            )
            out.append(Transcript("haystack", renamed, tuple(messages)))
    return out


def read_gold(path: Path | None) -> list[Any]:
    """The gold sessions of ``path`` (none without one); a bad line stops the bench."""
    if path is None:
        return []
    from tasks.evaluation import read_gold as parse

    gold, problems = parse(str(path), path.read_text("utf-8"))
    if problems:
        raise SystemExit("\n".join(str(p) for p in problems))
    return gold


def score_gold(gold: list[Any], transcripts: Sequence[Transcript], produced: Any) -> Any:
    """Summary figures per language and overall, coverage measured with all-MiniLM-L6-v2."""
    from storage.embedding import LocalEmbedder
    from tasks.evaluation import score_summaries

    return score_summaries(gold, transcripts, produced, LocalEmbedder())


def summaries_only(
    embedder_name: str, sets: tuple[tuple[str, str], tuple[str, str]], gold: list[Any]
) -> Any:
    """Summary figures of each gold session extracted directly, with no store."""
    from storage.embedding import make_embedder
    from tasks.evaluation import extract_directly, load_inputs
    from tasks.extraction import HeuristicExtractor

    inputs = load_inputs(*sets)
    wanted = {g.session_id for g in gold}
    transcripts = [t for t in inputs.transcripts if t.session.id in wanted]
    embedder = make_embedder(embedding_settings(embedder_name))
    started = time.perf_counter()
    produced = extract_directly(transcripts, HeuristicExtractor(embedder))
    print(
        f"[{embedder_name}] {len(transcripts)} gold sessions extracted in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return score_gold(gold, transcripts, produced)


def embedding_settings(spec: str, *, turn_context: bool | None = None) -> Any:
    """``provider[:stored[:queries]]`` as embedding settings (see the module's notes);
    ``turn_context`` None: the setting's default."""
    from storage.kernel.settings import EmbeddingSettings

    provider, *encoders = spec.split(":")
    fields: dict[str, Any] = dict(zip(("store_encoder", "query_encoder"), encoders, strict=False))
    if turn_context is not None:
        fields["turn_context"] = turn_context
    return EmbeddingSettings(provider=provider, **fields)


@dataclasses.dataclass(frozen=True)
class Golds:
    """What the figures are checked against: gold summaries, gold answers, budgets."""

    summaries: list[Any]
    answers: dict[str, str]
    budgets: tuple[int, ...]


def read_answers_file(path: Path | None) -> dict[str, str]:
    """The gold answers of ``path`` by question id (none without one); a bad line stops."""
    if path is None:
        return {}
    from tasks.evaluation import read_answers

    answers, problems = read_answers(str(path), path.read_text("utf-8"))
    if problems:
        raise SystemExit("\n".join(str(p) for p in problems))
    return answers


def budget_figures(
    retriever: Any, queries: Sequence[Any], weights: dict[str, float], golds: Golds
) -> Any:
    """Answer and evidence recall within each budget, passages against whole memories."""
    from tasks.evaluation import run_queries, score_budgets

    runs = run_queries(retriever, queries, POOL, weights)
    triples = [(r.query.id, r.query.evidence_message_ids, r.hits) for r in runs]
    return score_budgets(triples, golds.answers, golds.budgets)


def evaluate(
    embedder_name: str,
    sets: tuple[tuple[str, str], tuple[str, str]],
    workdir: Path,
    rankings: list[str],
    hay: int,
    golds: Golds,
    *,
    turn_context: bool | None = None,
) -> dict[str, Any]:
    from storage.kernel.scoring import resolve_weights
    from storage.kernel.settings import Settings
    from storage.retrieval import Retriever
    from storage.server.engine import open_store
    from storage.server.migrate import upgrade
    from tasks.evaluation import (
        build_memory,
        load_inputs,
        read_produced,
        run_queries,
        score_question,
        summarise,
    )

    embedding = embedding_settings(embedder_name, turn_context=turn_context)
    stored = embedding.provider + (
        "" if embedding.store_encoder in ("auto", "float32") else f"-{embedding.store_encoder}"
    )
    stored += "-turn-context" if embedding.turn_context else ""
    settings = Settings(data_dir=workdir / stored, embedding=embedding)
    store = open_store(settings)
    upgrade(store.engine, settings)
    inputs = load_inputs(*sets)
    if inputs.problems:
        raise SystemExit("\n".join(str(p) for p in inputs.problems))
    retriever = Retriever.from_settings(settings)
    started = time.perf_counter()
    sessions = [*inputs.transcripts, *haystack(inputs.transcripts, hay)]
    build = build_memory(
        store.engine,
        sessions,
        retriever.embedder,
        settings.tz,
        turn_context=settings.embedding.turn_context,
    )
    labelled, seconds = len(inputs.transcripts), time.perf_counter() - started
    print(
        f"[{embedder_name}] {labelled} labelled and {len(sessions) - labelled} haystack sessions, "
        f"{build.messages} messages, {len(inputs.queries)} questions; memory built in "
        f"{seconds:.1f} s ({build.written.memories_added} memories added)"
    )
    namespaces = {t.session.id: t.session.namespace for t in inputs.transcripts}
    sent = {f"{t.session.id}:{m.id}": m.timestamp for t in inputs.transcripts for m in t.messages}
    out: dict[str, Any] = {}
    for name in rankings:
        weights = RANKINGS[name] or resolve_weights(name)
        runs = run_queries(retriever, inputs.queries, 10, weights)
        scores = [score_question(r.query, r.hits, (5, 10), namespaces) for r in runs]
        by_age = [
            replace(s, category=age_bucket(r.query, sent))
            for s, r in zip(scores, runs, strict=True)
        ]
        ms = sorted(r.ms for r in runs)
        summary = summarise(scores, (5, 10))
        ages = {k: v for k, v in summarise(by_age, (5, 10)).items() if k != "overall"}
        by_script = [
            replace(s, category=script_group(r.query.question))
            for s, r in zip(scores, runs, strict=True)
        ]
        scripts = {k: v for k, v in summarise(by_script, (5, 10)).items() if k != "overall"}
        out[name] = {
            "summary": {**summary, **ages, **scripts},
            "p95_ms": ms[int(0.95 * len(ms))],
        }
    if golds.budgets:
        weights = RANKINGS[rankings[0]] or resolve_weights(rankings[0])
        out[BUDGETED] = budget_figures(retriever, inputs.queries, weights, golds)
    if golds.summaries:
        produced = read_produced(store.engine, [g.session_id for g in golds.summaries])
        out[SUMMARIES] = score_gold(golds.summaries, inputs.transcripts, produced)
    return out


def age_bucket(query: Any, sent: dict[str, datetime]) -> str:
    """How old the question's newest evidence is when it is asked."""
    times = [sent[m] for m in query.evidence_message_ids if m in sent]
    if not times:
        return "age: no evidence"
    days = (query.asked_at - max(times)).days
    return "age: < 30 days" if days < 30 else "age: 30-179 days" if days < 180 else "age: 180+ days"


# Scripts written without spaces between words (Thai, Lao, Burmese, Khmer, Japanese kana,
# CJK ideographs): what migration 0026 segments into character bigrams.
UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]"
)


def script_group(question: str) -> str:
    """Whether the question is written in a script without spaces (Japanese here)."""
    return "script: no spaces" if UNSPACED.search(question) else "script: spaced"


def _cell(group: Any) -> str:
    msg = group.messages.recall[10] if group.messages else None
    dist = group.distinct.recall[5] if group.distinct else None
    mrr = group.messages.mrr if group.messages else None
    if msg is None:
        return f"{'abstained ' + str(group.abstained) + '/' + str(group.unanswerable):>20}"
    return f"{msg:>6.3f} {dist if dist is not None else 0:>6.3f} {mrr:>6.3f}"


def render_summaries(embedder: str, groups: Any) -> None:
    from tasks.evaluation import render_summary_table

    print(
        f"\n{embedder}: summaries against the gold: share of gold facts covered at cosine >= 0.6"
        " (all-MiniLM-L6-v2) by the summary, the extracted facts and the first turns of the"
        " summary's length; ROUGE-1 recall and precision of the summary and of those turns"
    )
    print(render_summary_table(groups))
    if groups["overall"].missing:
        print(f"gold sessions not found: {', '.join(groups['overall'].missing)}")


def render(embedder: str, results: dict[str, Any]) -> None:
    from tasks.evaluation import render_budgets

    summaries = results.pop(SUMMARIES, None)
    if summaries is not None:
        render_summaries(embedder, summaries)
    budgets = results.pop(BUDGETED, None)
    if budgets is not None:
        print(
            f"\n{embedder}: within a token budget, passages against whole memories in rank "
            "order: answer recall, evidence recall, mean tokens used"
        )
        print(render_budgets(budgets))
    names = list(results)
    print(f"\n{embedder}: message R@10, distinct-session R@5, message MRR")
    print(f"{'category':<22}{'n':>4}  " + "  ".join(f"{n:>20}" for n in names))
    categories = list(results[names[0]]["summary"])
    for category in categories:
        first = results[names[0]]["summary"][category]
        cells = "  ".join(_cell(results[n]["summary"][category]) for n in names)
        print(f"{category:<22}{first.questions:>4}  {cells}")
    print(f"{'search p95 ms':<26}  " + "  ".join(f"{results[n]['p95_ms']:>20.1f}" for n in names))


def as_json(results: dict[str, Any]) -> dict[str, Any]:
    from tasks.evaluation import budgets_as_dict, group_as_dict, summary_report_as_dict

    return {
        name: {g: summary_report_as_dict(r[g]) for g in r}
        if name == SUMMARIES
        else budgets_as_dict(r)
        if name == BUDGETED
        else {
            "p95_ms": r["p95_ms"],
            "summary": {c: group_as_dict(g) for c, g in r["summary"].items()},
        }
        for name, r in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", type=Path, default=Path(__file__).parent / "data" / "eval")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help=f"measure the held-out parts (folders ending {HELD_OUT}) instead of the others; "
        "only at the end of a piece of work, never to tune",
    )
    parser.add_argument("--parts", default="", help="only these parts (folder names, commas)")
    parser.add_argument("--embedders", default="hashing,local")
    parser.add_argument("--rankings", default=",".join(RANKINGS))
    parser.add_argument("--haystack", type=int, default=20, help="filler sessions per namespace")
    parser.add_argument("--workdir", type=Path, help="keep the stores here (reused on rerun)")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    parser.add_argument(
        "--gold",
        default=str(Path(__file__).parent / "data" / "eval" / "gold" / "summaries.jsonl"),
        help="gold summaries and facts to score the summaries against ('': none)",
    )
    parser.add_argument(
        "--answers",
        default=str(Path(__file__).parent / "data" / "eval" / "gold" / "answers.jsonl"),
        help="gold answers, for answer recall within token budgets ('': none)",
    )
    parser.add_argument(
        "--budgets",
        default="250,500,1000",
        help="token budgets to fit passages and whole memories into ('': none)",
    )
    parser.add_argument(
        "--turn-context",
        choices=["on", "off"],
        help="embed turns with their context or not (embedding.turn_context; default: its default)",
    )
    parser.add_argument(
        "--summaries-only",
        action="store_true",
        help="extract the gold sessions directly and score their summaries; no store, no questions",
    )
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="archivist-eval-"))
    if args.workdir is None:  # registered first, so it runs after the embedded server stops
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    rankings = [r for r in args.rankings.split(",") if r]
    unknown = sorted(set(rankings) - set(RANKINGS))
    if unknown:
        raise SystemExit(f"unknown ranking(s) {unknown}; use {list(RANKINGS)}")
    report: dict[str, Any] = {}
    parts = [p for p in args.parts.split(",") if p]
    sets = read_set(args.set, held_out=args.held_out, parts=parts)
    gold = read_gold(Path(args.gold) if args.gold else None)
    answers = read_answers_file(Path(args.answers) if args.answers else None)
    budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    golds = Golds(gold, answers, budgets)
    if args.summaries_only and not gold:
        raise SystemExit("--summaries-only needs gold summaries (--gold)")
    for embedder in [e for e in args.embedders.split(",") if e]:
        if args.summaries_only:
            groups = summaries_only(embedder, sets, gold)
            render_summaries(embedder, groups)
            report[embedder] = as_json({SUMMARIES: groups})
            continue
        turn_context = None if args.turn_context is None else args.turn_context == "on"
        results = evaluate(
            embedder, sets, workdir, rankings, args.haystack, golds, turn_context=turn_context
        )
        report[embedder] = as_json(results)
        render(embedder, results)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
