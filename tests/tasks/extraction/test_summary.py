"""The offline extractive summary: informative sentences, attributed, within budget, once."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from storage.embedding import EmbedOnce, HashingEmbedder, LocalEmbedder, default_cache_dir
from storage.kernel.inputs import LATEST_INSTANT
from storage.kernel.records import MessageRecord, SessionRecord, SessionState
from storage.kernel.settings import EmbeddingSettings
from tasks.evaluation import load_inputs
from tasks.extraction import BUDGET, HeuristicExtractor, centrality, names, summary_embedder
from tasks.samples import generate_demo
from tasks.sync import parse_transcript

T0 = datetime(2026, 2, 3, 19, 0, tzinfo=UTC)
EVAL = Path(__file__).parents[3] / "bench" / "data" / "eval"


def _state(turns: list[tuple[str, str]], title: str | None = None) -> SessionState:
    """(speaker, text) turns; "aria" speaks as the assistant, everyone else as a user."""
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
    session = SessionRecord(id="s1", namespace="mara", agent="aria", title=title)
    return SessionState(session=session, messages=messages, fingerprint="f")


def _summary(turns: list[tuple[str, str]]) -> str:
    return HeuristicExtractor(HashingEmbedder()).extract(_state(turns)).episode.summary


FILLER = [
    ("Mara", "Okay, sounds good."),
    ("aria", "Sure, happy to help with that."),
    ("Mara", "Thanks a lot!"),
    ("aria", "You're welcome."),
]


def test_a_long_session_keeps_its_facts_with_numbers_attributed_within_budget() -> None:
    turns = [
        ("Mara", "I signed up for the Leipzig half marathon on April 19th."),
        *FILLER * 8,
        ("aria", "Keep the hills short and add strength work twice a week."),
        *FILLER * 8,
        ("Mara", "My old shoes have about 700 km on them, so I'll buy new ones."),
        *FILLER * 4,
    ]

    summary = _summary(turns)

    assert len(summary) <= BUDGET
    assert "Mara signed up for the Leipzig half marathon on April 19th." in summary
    assert "Aria: Keep the hills short and add strength work twice a week." in summary
    assert "700 km" in summary
    assert "aria" not in summary  # the agent's id as a name, with its capital
    assert summary.count("Thanks a lot") <= 1 and "You're welcome" not in summary


def test_sentences_said_again_are_told_once() -> None:
    turns = [
        ("Mara", "The physio said my knee has IT band irritation."),
        ("aria", "IT band irritation usually settles with rest and foam rolling."),
        ("Mara", "The physio said my knee has IT band irritation."),
        ("Mara", "So the physio said my knee has IT band irritation, again."),
        ("aria", "Then skip the intervals this week and run two easy 5 km runs."),
    ]

    summary = _summary(turns)

    assert summary.count("IT band irritation") == 2  # Mara's once, Aria's answer once
    assert "two easy 5 km runs" in summary


def test_an_outcome_is_told_once_never_also_as_open() -> None:
    result = HeuristicExtractor().extract(
        _state(
            [
                ("aria", "TAP leaves at 10:40 and Lufthansa at 12:15 on Friday."),
                ("Mara", "Let's go with the Lufthansa one next week, on Friday."),
                ("aria", "I'll book it tonight and send you the ticket."),
            ],
            title="Flights to Lisbon",
        )
    )
    episode = result.episode
    assert [o.type for o in episode.outcomes] == ["decision"]
    assert [t.status for t in episode.open_threads] == ["promised"]
    assert episode.open_threads[0].context == "Aria will book it tonight and send you the ticket."
    assert episode.summary.count("Lufthansa one") == 1
    assert episode.summary.count("book it tonight") == 1
    assert "Mara decided: Let's go with the Lufthansa one next week, on Friday." in episode.summary


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (
            [
                ("Jonas", "Ich habe am Donnerstag um 16:30 einen Termin bei Dr. Weber."),
                ("aria", "Soll ich dich am Mittwochabend daran erinnern?"),
                ("Jonas", "Ja bitte, und frag nach den Kosten für die Zahnreinigung."),
            ],
            "Jonas: Ich habe am Donnerstag um 16:30 einen Termin bei Dr. Weber.",
        ),
        (
            [
                ("健二", "来週の金曜日に京都で会議があります。資料は三十部必要です。"),
                ("aria", "会議の資料は木曜日までに印刷しておきますね。"),
            ],
            "健二: 来週の金曜日に京都で会議があります。",
        ),
    ],
)
def test_any_language_is_summarised_in_its_own_words(
    turns: list[tuple[str, str]], expected: str
) -> None:
    summary = _summary(turns)
    assert expected in summary and len(summary) <= BUDGET


def test_the_most_central_sentence_weighs_most() -> None:
    hub = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
    vectors = np.array([hub, [1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    weights = centrality(vectors)
    assert weights.argmax() == 0 and weights.mean() == pytest.approx(1.0)


def _sessions() -> Iterator[SessionState]:
    """Every session of the labelled set and of three weeks of the demo."""
    for part in sorted(EVAL.glob("*/sessions.jsonl")):
        inputs = load_inputs((str(part), part.read_text("utf-8")), _no_queries(part))
        for t in inputs.transcripts:
            yield SessionState(session=t.session, messages=t.messages, fingerprint="f")
    for file in generate_demo(date(2026, 11, 20), ZoneInfo("UTC")):
        transcript, _ = parse_transcript(file.name, file.text, LATEST_INSTANT)
        if transcript is not None:
            yield SessionState(
                session=transcript.session, messages=transcript.messages, fingerprint="f"
            )


def _no_queries(part: Path) -> tuple[str, str]:
    queries = part.parent / "queries.jsonl"
    return str(queries), queries.read_text("utf-8")


_WORD = re.compile(r"\w+")


def _proper_names(state: SessionState) -> set[str]:
    """Words the session writes capitalised as names and never in lower case."""
    texts = [m.content for m in state.messages] + [m.speaker for m in state.messages]
    lower = {w for text in texts for w in _WORD.findall(text) if w.islower()}
    found = {w for text in texts for name in names(text) for w in _WORD.findall(name)}
    return {
        w
        for w in found
        if len(w) >= 3 and w.isalpha() and not w.isupper() and w.lower() not in lower
    }


def test_no_summary_lowers_a_name_its_session_writes_capitalised() -> None:
    extractor = HeuristicExtractor(HashingEmbedder())
    checked, lowered = 0, []
    for state in _sessions():
        summary = extractor.extract(state).episode.summary
        words = set(_WORD.findall(summary))
        lowered += [(state.session.id, n) for n in _proper_names(state) if n.lower() in words]
        checked += 1
    assert checked > 500
    assert lowered == []


def test_the_summary_sends_no_sentence_out_and_caches_none() -> None:
    remote = EmbeddingSettings(
        provider="openai", base_url="http://127.0.0.1:9/v1", model="m", dim=1536, cache="on"
    )
    local = summary_embedder(remote)
    assert isinstance(local, EmbedOnce) and isinstance(local.inner, LocalEmbedder)  # no endpoint
    hashing = summary_embedder(EmbeddingSettings(provider="hashing", cache="on"))
    assert isinstance(hashing, EmbedOnce)
    assert isinstance(hashing.inner, HashingEmbedder)  # the model itself, not the cache around it


class _Counting:
    """The local model's static int8 graph (the sync's default), counting its calls."""

    def __init__(self) -> None:
        self._model = LocalEmbedder(cache_dir=default_cache_dir(), graph="int8-static")
        self.calls: list[int] = []
        self.name, self.dim = self._model.name, self._model.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self._model.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._model.embed_query(text)


def test_sessions_extracted_together_get_the_summaries_each_gets_alone() -> None:
    states = [
        SessionState(session=t.session, messages=t.messages, fingerprint="f")
        for file in generate_demo(date(2026, 11, 20), ZoneInfo("UTC"))[:40]
        if (t := parse_transcript(file.name, file.text, LATEST_INSTANT)[0]) is not None
    ]
    together, alone = _Counting(), _Counting()

    many = HeuristicExtractor(together).extract_many(states)
    one_by_one = [HeuristicExtractor(alone).extract(state) for state in states]

    assert len(states) > 20 and together.calls == [sum(alone.calls)] and len(alone.calls) > 20
    assert many == one_by_one  # summaries, memories and every score
