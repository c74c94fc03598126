"""Facts name their subject, carry their context and date; fragments need something to
resolve them. Priming on the demo lists only such facts."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from storage.embedding import HashingEmbedder
from storage.kernel.facts import statement
from storage.kernel.inputs import LATEST_INSTANT
from storage.kernel.records import MessageRecord, SessionRecord, SessionState
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.evaluation import build_memory
from tasks.extraction import HeuristicExtractor, MemoryDraft, display_name
from tasks.samples import generate_demo
from tasks.sync import Transcript, parse_transcript

T0 = datetime(2026, 5, 1, 22, 30, tzinfo=UTC)


def _facts(
    turns: list[tuple[str, str]], title: str | None = None, tz: ZoneInfo | None = None
) -> list[MemoryDraft]:
    messages = tuple(
        MessageRecord(
            id=f"m{i}",
            role="assistant" if speaker == "aria" else "user",
            speaker=speaker,
            content=text,
            timestamp=T0 + timedelta(minutes=i),
        )
        for i, (speaker, text) in enumerate(turns)
    )
    session = SessionRecord(id="s1", namespace="n", agent="aria", title=title)
    state = SessionState(session=session, messages=messages, fingerprint="f")
    extractor = HeuristicExtractor(tz=tz or UTC)
    return [m for m in extractor.extract(state).memories if m.kind != "turn"]


def test_a_statement_that_stands_alone_names_its_subject_and_its_day() -> None:
    facts = _facts([("Mara", "My knees ache a bit after hills.")], title="Half marathon plans")
    assert [(f.kind, f.content) for f in facts] == [
        ("fact", "Mara's knees ache a bit after hills. (2026-05-01)")
    ]


def test_the_date_is_the_local_day_it_was_said() -> None:
    facts = _facts([("Mara", "I live in Leipzig.")], tz=ZoneInfo("Europe/Berlin"))
    assert facts[0].content == "Mara lives in Leipzig. (2026-05-02)"  # 00:30 in Berlin


def test_a_fragment_takes_the_question_before_the_title() -> None:
    facts = _facts(
        [
            ("aria", "Which of the two flights do you want?"),
            ("Nebraas", "I prefer that one."),
        ],
        title="Flights to Porto",
    )
    assert facts[0].content == (
        'Nebraas prefers that one. (answering "Which of the two flights do you want?", 2026-05-01)'
    )


def test_a_fragment_is_kept_with_what_resolves_it_and_dropped_without() -> None:
    answered = _facts(
        [
            ("aria", "What do you think of the new Spider-Man games?"),
            ("Nebraas", "I'm obsessed with them."),
        ]
    )
    alone = _facts([("Nebraas", "Hey there."), ("Nebraas", "I'm obsessed with them.")])
    titled = _facts([("Nebraas", "I'm obsessed with them.")], title="Video games")

    assert [f.content for f in answered] == [
        "Nebraas is obsessed with them. "
        '(answering "What do you think of the new Spider-Man games?", 2026-05-01)'
    ]
    assert alone == []
    assert [f.content for f in titled] == [
        'Nebraas is obsessed with them. (in "Video games", 2026-05-01)'
    ]


def test_a_decision_says_who_decided() -> None:
    facts = _facts(
        [
            ("aria", "Lufthansa leaves at 12:15 and TAP at 10:40."),
            ("Mara", "Let's go with the Lufthansa one on Friday."),
        ],
        title="Flights to Lisbon",
    )
    assert [(f.kind, f.content) for f in facts] == [
        (
            "decision",
            'Mara decided: Let\'s go with the Lufthansa one on Friday. (in "Flights to Lisbon", '
            "2026-05-01)",
        )
    ]


TODAY = date(2026, 11, 20)
_FACT_LINE = re.compile(r"^- \[Memory \d+\] (.*)$")


@pytest.mark.parametrize("first_message", [None, "when is the dentist?"])
def test_priming_on_the_demo_names_the_subject_of_every_fact(
    store: Store, first_message: str | None
) -> None:
    transcripts: list[Transcript] = []
    for file in generate_demo(TODAY, ZoneInfo("UTC")):
        transcript, _ = parse_transcript(file.name, file.text, LATEST_INSTANT)
        assert transcript is not None
        transcripts.append(transcript)
    embedder = HashingEmbedder(384)
    build_memory(store.engine, transcripts, embedder, UTC)
    retriever = Retriever(store.engine, embedder, RetrievalSettings())
    as_of = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)

    listed = 0
    for namespace in ("alice", "bob", "team-atlas"):
        speakers = {
            display_name(m.speaker, m.role)
            for t in transcripts
            if t.session.namespace == namespace
            for m in t.messages
        }
        priming = retriever.prime(namespace, first_message, as_of=as_of, record_access=False)
        text = priming.formatted
        assert "Things I know:" in text
        block = text.split("Things I know:\n", 1)[1].split("\n\n", 1)[0]
        lines = [_FACT_LINE.match(line) for line in block.splitlines()]
        assert lines and all(lines)
        said = [statement(m[1]) for m in lines if m is not None]
        assert len(set(said)) == len(said)  # a fact told in several sessions, listed once
        for match in lines:
            assert match is not None
            fact = match[1]
            assert fact.startswith(tuple(speakers)), fact  # its subject, by name,
            assert not re.match(r"[^:]+: (I|My|I'm|I've|I'll|I'd)\b", fact), fact  # not "I"
            assert re.search(r"\d{4}-\d{2}-\d{2}\)$", fact), fact  # and when it was said
            listed += 1
    assert listed >= 6
