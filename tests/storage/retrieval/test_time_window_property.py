"""Property: a question naming a time window ranks a memory inside the window above an
equally relevant one outside it, under the default preset.

Cases are generated from a seeded random: a time expression of one of four languages
with random numbers, months, days and seasons, asked at a random time, and two equally
relevant memories, one inside the window the expression names and one outside it
(as often newer as older, so the newer-first tie-break cannot pass the test alone).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel import scoring
from storage.kernel.settings import RetrievalSettings
from storage.memories import NewMemory, insert_memories
from storage.retrieval import Retriever, TimeWindow, read_time
from storage.retrieval.rank import ranked
from storage.server.engine import Store

MONTHS = {
    "en": ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"],
    "de": ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
           "Oktober", "November", "Dezember"],
    "es": ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
           "septiembre", "octubre", "noviembre", "diciembre"],
}  # fmt: skip
FIXED = {
    "en": ["yesterday", "the day before yesterday", "last week", "last month", "last year",
           "this year", "last summer", "last winter", "on Monday", "last Friday"],
    "de": ["gestern", "vorgestern", "letzte Woche", "letzten Monat", "letztes Jahr",
           "letzten Sommer", "am Dienstag"],
    "es": ["ayer", "anteayer", "la semana pasada", "el mes pasado", "el año pasado",
           "el verano pasado", "el jueves"],
    "ja": ["昨日", "一昨日", "先週", "先月", "去年", "去年の夏", "今年"],
}  # fmt: skip
Expression = Callable[[random.Random, datetime], str]


def _month(lang: str, rng: random.Random) -> str:
    return rng.choice(MONTHS[lang])


# Each language's expressions, each drawing its own numbers.
EXPRESSIONS: dict[str, list[Expression]] = {
    "en": [
        lambda r, t: r.choice(FIXED["en"]),
        lambda r, t: f"{r.randint(2, 11)} {r.choice(['days', 'weeks', 'months'])} ago",
        lambda r, t: f"in {_month('en', r)}",
        lambda r, t: f"on {r.randint(1, 28)} {_month('en', r)}",
        lambda r, t: f"in {r.randint(t.year - 3, t.year - 1)}",
        lambda r, t: f"over the past {r.randint(2, 6)} weeks",
    ],
    "de": [
        lambda r, t: r.choice(FIXED["de"]),
        lambda r, t: f"vor {r.randint(2, 11)} {r.choice(['Tagen', 'Wochen', 'Monaten'])}",
        lambda r, t: f"im {_month('de', r)}",
        lambda r, t: f"am {r.randint(1, 28)}. {_month('de', r)}",
        lambda r, t: f"im Jahr {r.randint(t.year - 3, t.year - 1)}",
    ],
    "es": [
        lambda r, t: r.choice(FIXED["es"]),
        lambda r, t: f"hace {r.randint(2, 11)} {r.choice(['días', 'semanas', 'meses'])}",
        lambda r, t: f"en {_month('es', r)}",
        lambda r, t: f"el {r.randint(1, 28)} de {_month('es', r)}",
        lambda r, t: f"en {r.randint(t.year - 3, t.year - 1)}",
    ],
    "ja": [
        lambda r, t: r.choice(FIXED["ja"]),
        lambda r, t: f"{r.randint(2, 11)}{r.choice(['日', '週間', 'か月'])}前",
        lambda r, t: f"{r.randint(1, 12)}月",
        lambda r, t: f"{r.randint(1, 12)}月{r.randint(1, 28)}日",
        lambda r, t: f"{r.randint(t.year - 3, t.year - 1)}年",
    ],
}
TOPICS = ["boiler repair", "dentist visit", "flat viewing", "band rehearsal", "tax return"]


@dataclass(frozen=True)
class Case:
    query: str
    as_of: datetime
    window: TimeWindow
    inside: datetime
    outside: datetime


def question(lang: str, topic: str, expression: str) -> str:
    return {
        "en": f"what did I note about the {topic} {expression}?",
        "de": f"was habe ich {expression} zum Thema {topic} notiert?",
        "es": f"¿qué anoté sobre {topic} {expression}?",
        "ja": f"{expression}の{topic}について何を書いた？",
    }[lang]


def cases(n: int, seed: int) -> list[Case]:
    """``n`` generated cases whose window has room for a memory inside and one outside."""
    rng = random.Random(seed)
    out: list[Case] = []
    while len(out) < n:
        lang = rng.choice(sorted(EXPRESSIONS))
        as_of = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randint(0, 3 * 525600))
        expression = rng.choice(EXPRESSIONS[lang])(rng, as_of)
        query = question(lang, rng.choice(TOPICS), expression)
        window = read_time(query, as_of, UTC).window
        assert window is not None, query  # every generated expression names a window
        last = min(window.end, as_of)
        if last <= window.start:
            continue  # the window has not begun by as_of (nothing could be inside yet)
        inside = _between(rng, window.start, last)
        length = window.end - window.start
        if rng.random() < 0.5 and as_of - window.end > timedelta(hours=1):
            outside = _between(rng, window.end, min(as_of, window.end + 3 * length))  # newer
        else:
            outside = _between(rng, window.start - 3 * length, window.start)  # older
        out.append(Case(query, as_of, window, inside, outside))
    return out


def _between(rng: random.Random, start: datetime, end: datetime) -> datetime:
    seconds = int((end - start).total_seconds())
    return start + timedelta(seconds=rng.randint(1, max(1, seconds - 1)))


def row(id_: int, occurred_at: datetime, cosine: float, bm25: float) -> Any:
    """A memory candidate as the candidates statement returns it."""
    return SimpleNamespace(
        id=id_, namespace="alice", kind="fact", content=f"memory {id_}", importance=0.5,
        vehemence=0.0, access_count=0, last_accessed_at=None, occurred_at=occurred_at,
        created_at=occurred_at, session_id=None, message_ids=("m0",), tier="fresh",
        cosine=cosine, bm25=bm25,
    )  # fmt: skip


def test_generated_cases_rank_the_memory_inside_the_window_first() -> None:
    rng = random.Random(31)
    weights = scoring.resolve_weights(RetrievalSettings().preset)
    generated = cases(600, seed=31)
    for case in generated:
        cosine, bm25 = rng.uniform(0.3, 0.9), rng.choice([0.0, rng.uniform(0.5, 8.0)])
        inside_id, outside_id = rng.sample(range(1, 1000), 2)
        pool = [
            row(inside_id, case.inside, cosine, bm25),
            row(outside_id, case.outside, cosine, bm25),
        ]
        # Candidates of other relevance around them, from any time.
        pool += [
            row(id_, case.as_of - timedelta(days=rng.uniform(0, 900)), rng.uniform(0, 1), 0.0)
            for id_ in range(1000, 1000 + rng.randint(0, 30))
        ]
        rng.shuffle(pool)
        when = read_time(case.query, case.as_of, UTC)
        hits = list(ranked(pool, when, weights, RetrievalSettings()))
        order = [h.memory_id for h in hits]
        assert order.index(inside_id) < order.index(outside_id), case
        [hit] = [h for h in hits if h.memory_id == inside_id]
        assert hit.factors["window"] == 1.0 and f"window {case.window}" in hit.explain()
    # Half of the outside memories are newer: the tie-break alone would rank those first.
    assert sum(c.outside > c.inside for c in generated) > len(generated) // 4
    assert {c.window.phrase for c in generated} > {"yesterday", "先週", "ayer", "im Mai"}


def test_searches_rank_the_memory_inside_the_window_first(store: Store) -> None:
    """The same property through the store: equally relevant because equally worded."""
    generated = cases(24, seed=7)
    for n, case in enumerate(generated):
        namespace = f"case-{n}"
        text = f"Note {n}: the quarterly review moved to room {n}"
        first, second = (case.inside, case.outside) if n % 2 else (case.outside, case.inside)
        ids = [remember(store, namespace, text, at, key) for key, at in enumerate((first, second))]
        inside_id = ids[0] if first is case.inside else ids[1]
        retriever = Retriever(store.engine, HashingEmbedder(store.settings.embedding.dim))
        query = f"{case.query} quarterly review room {n}"

        hits = retriever.search(namespace, query, as_of=case.as_of, record_access=False)

        assert [h.memory_id for h in hits][0] == inside_id, case
        assert hits[0].window == case.window and hits[0].score > hits[1].score


def remember(store: Store, namespace: str, text: str, at: datetime, key: int) -> int:
    """One memory, with its own content key (the same text may be stored twice)."""
    vector = HashingEmbedder(store.settings.embedding.dim).embed([text])[0]
    memory = NewMemory(
        namespace=namespace,
        kind="fact",
        content=text,
        content_key=hashlib.sha256(f"{namespace}{key}{text}".encode()).hexdigest(),
        embedding=vector,
        embedding_model=HashingEmbedder(store.settings.embedding.dim).name,
        importance=0.5,
        vehemence=0.0,
        session_id=None,
        message_ids=(f"m{key}",),
        run_id=None,
        extractor="test",
        occurred_at=at,
        created_at=at,
    )
    with Session(store.engine) as session, session.begin():
        [memory_id] = insert_memories(session, [memory])
    return memory_id
