"""The passage of a hit: how often it holds the gold answer, and its CPU per hit.

    .venv/bin/python bench/passage.py [--embedder local] [--workdir DIR] [--repeat 5]

Builds memory from the parts of ``bench/data/eval`` that have gold answers
(``gold/answers.jsonl``; never a held-out part) in a fresh embedded store, the daily sync's
way, asks each of those questions as of its time (10 hits), and prints

- how many first hits hold the gold answer in their whole memory, and in their passage;
- for each question, the best-ranked hit whose whole memory holds the answer: how often its
  passage holds it too (what the passage step itself gets right, whatever the ranking);
- the CPU time of the passage step (``storage.retrieval.with_passages``, the query read once
  per search) per hit, over every search's hits: once with the word cache cold (a fresh
  process), then ``--repeat`` times: mean, and per search p50 and p95 divided by its hits.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # bench/queue.py would shadow the standard library's queue

import argparse
import atexit
import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from typing import Any

EVAL = Path(__file__).parent / "data" / "eval"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--workdir", type=Path, help="keep the store here (reused on rerun)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="archivist-passage-"))
    if args.workdir is None:
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)

    from bench.eval import embedding_settings, read_set
    from storage.kernel.settings import Settings
    from storage.retrieval import Retriever
    from storage.server.engine import open_store
    from storage.server.migrate import upgrade
    from tasks.evaluation import build_memory, load_inputs, read_answers, run_queries

    answers, problems = read_answers("answers", (EVAL / "gold" / "answers.jsonl").read_text())
    if problems:
        raise SystemExit("\n".join(str(p) for p in problems))
    parts = sorted({json.loads(line)["part"] for line in _lines()})
    settings = Settings(
        data_dir=workdir / args.embedder, embedding=embedding_settings(args.embedder)
    )
    store = open_store(settings)
    upgrade(store.engine, settings)
    inputs = load_inputs(*read_set(EVAL, parts=parts))
    retriever = Retriever.from_settings(settings)
    build_memory(store.engine, inputs.transcripts, retriever.embedder, settings.tz)
    asked = [q for q in inputs.queries if q.id in answers]
    runs = run_queries(retriever, asked, 10)
    report(runs, answers)
    cpu(runs, args.repeat)


def _lines() -> list[str]:
    return [x for x in (EVAL / "gold" / "answers.jsonl").read_text().splitlines() if x.strip()]


def report(runs: list[Any], answers: dict[str, str]) -> None:
    first_whole = first_passage = holding = held = 0
    misses = []
    for run in runs:
        answer = " ".join(answers[run.query.id].split())
        flat = [(" ".join(h.content.split()), " ".join(h.shown.split())) for h in run.hits]
        if flat and answer in flat[0][0]:
            first_whole += 1
            first_passage += answer in flat[0][1]
        found = next((shown for whole, shown in flat if answer in whole), None)
        if found is not None:
            holding += 1
            held += answer in found
            if answer not in found:
                misses.append((run.query.id, answer, found))
    print(f"{len(runs)} questions with a gold answer (10 hits each)")
    print(f"first hit holds the answer: whole memory {first_whole}, passage {first_passage}")
    print(
        f"best-ranked hit whose memory holds the answer: {holding} questions; "
        f"its passage holds it in {held} ({held / max(holding, 1):.1%})"
    )
    for qid, answer, shown in misses:
        print(f"  missed {qid}: {answer!r} not in {shown[:160]!r}")


def cpu(runs: list[Any], repeat: int) -> None:
    from storage.retrieval.explain import with_passages

    searches = [([replace(h, passage="") for h in r.hits], r.query.question) for r in runs]
    searches = [(hits, q) for hits, q in searches if hits]
    us = 1e6
    for rounds, label in ((1, "first pass (word cache cold)"), (repeat, f"{repeat} passes")):
        per_search: list[float] = []
        total_hits = sum(len(h) for h, _ in searches) * rounds
        started = time.process_time()
        for _ in range(rounds):
            for hits, query in searches:
                t = time.process_time()
                with_passages(hits, query)
                per_search.append((time.process_time() - t) / len(hits))
        spent = time.process_time() - started
        per_search.sort()
        print(
            f"passage step CPU per hit, {label}: mean {spent / total_hits * us:.1f} us over "
            f"{total_hits} hits; per search p50 {per_search[len(per_search) // 2] * us:.1f} us, "
            f"p95 {per_search[int(0.95 * len(per_search))] * us:.1f} us per hit"
        )


if __name__ == "__main__":
    main()
