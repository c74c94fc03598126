"""Passages that answer, on built memory: the demo's dentist question, the own eval set's
gold answers (``bench/data/eval/gold/answers.jsonl``, no held-out part), and priming that
names the subject of every fact it lists."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from storage.embedding import HashingEmbedder, LocalEmbedder, default_cache_dir
from storage.kernel.inputs import LATEST_INSTANT
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.evaluation import build_memory, load_inputs, read_answers, run_queries
from tasks.samples import generate_demo
from tasks.sync import Transcript, parse_transcript

EVAL = Path(__file__).parents[3] / "bench" / "data" / "eval"
DEMO_DAY = date(2026, 11, 28)  # the README's demo
ASKED = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
# The small parts with gold answers: 88 questions in English, German, Spanish and Japanese.
PARTS = ("en-assistant", "en-two-people", "en-long", "de-es-ja")


def _demo() -> list[Transcript]:
    found = []
    for file in generate_demo(DEMO_DAY, ZoneInfo("UTC")):
        transcript, _ = parse_transcript(file.name, file.text, LATEST_INSTANT)
        if transcript is not None:
            found.append(transcript)
    return found


def test_the_demo_dentist_question_shows_the_booking_in_a_short_passage(store: Store) -> None:
    embedder = LocalEmbedder(cache_dir=default_cache_dir())  # loaded as a user's is, not built
    build_memory(store.engine, _demo(), embedder, store.settings.tz)
    retriever = Retriever(store.engine, embedder, store.settings.retrieval)

    hits = retriever.search(
        "alice", "when is the dentist?", limit=3, as_of=ASKED, record_access=False
    )

    first = hits[0]  # the latest arrangement: "when is" asks how the plan stands now
    assert "Booked: Dr. Moreau, Wednesday 16:30" in first.content, [h.content[:80] for h in hits]
    assert "Wednesday 16:30" in first.passage
    assert len(first.passage) < len(first.content) / 2
    # Before: the first 90 characters of each, none of them holding a time of the booking.
    assert not any("Wednesday 16:30" in h.content[:90] for h in hits)


def test_passages_hold_the_gold_answer_of_the_own_eval_set(store: Store) -> None:
    text = (EVAL / "gold" / "answers.jsonl").read_text("utf-8")
    answers, problems = read_answers("answers.jsonl", text)
    sets = [
        (
            "\n".join((EVAL / p / "sessions.jsonl").read_text("utf-8") for p in PARTS),
            "\n".join((EVAL / p / "queries.jsonl").read_text("utf-8") for p in PARTS),
        )
    ]
    inputs = load_inputs(("sessions", sets[0][0]), ("queries", sets[0][1]))
    embedder = HashingEmbedder()
    build_memory(store.engine, inputs.transcripts, embedder, store.settings.tz)
    retriever = Retriever(store.engine, embedder, store.settings.retrieval)
    asked = [q for q in inputs.queries if q.id in answers]

    held: list[tuple[str, str, str]] = []
    missed: list[tuple[str, str, str]] = []
    for run in run_queries(retriever, asked, 10):
        answer = " ".join(answers[run.query.id].split())
        holding = next((h for h in run.hits if answer in " ".join(h.content.split())), None)
        if holding is None:
            continue  # ranking's miss, not the passage's
        shown = " ".join(holding.shown.split())
        (held if answer in shown else missed).append((run.query.id, answer, shown))

    assert problems == [] and len(asked) >= 80
    assert len(held) >= 21, missed
    assert len(held) >= 0.85 * (len(held) + len(missed)), missed
    # Passages are parts: most are much shorter than the memories they come from.
    assert sum(len(s) <= 400 for _, _, s in held) >= 0.9 * len(held)


_NAME = re.compile(r"\b[A-Z][a-z]+\b")


def test_priming_names_the_subject_of_every_fact_it_lists(store: Store) -> None:
    embedder = HashingEmbedder()
    transcripts = _demo()
    build_memory(store.engine, transcripts, embedder, store.settings.tz)
    retriever = Retriever(store.engine, embedder, store.settings.retrieval)
    speakers = {
        m.speaker.casefold()
        for t in transcripts
        if t.session.namespace == "alice"
        for m in t.messages
        if m.speaker
    }

    for message in (None, "Hi again!", "When is the dentist?"):
        primed = retriever.prime("alice", message, as_of=ASKED, record_access=False)
        listed = primed.formatted.split("Things I know:\n", 1)[1].split("\n\n", 1)[0]
        facts = [line for line in listed.splitlines() if line.startswith("- [Memory")]
        assert facts, primed.formatted
        for line in facts:
            named = {w.casefold() for w in _NAME.findall(line)}
            assert named & speakers, (message, line, sorted(speakers))
