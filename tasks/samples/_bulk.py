"""Bulk benchmark data: synthetic sessions over skewed namespaces, deterministic per seed."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import datetime, timedelta

from storage.kernel.records import MessageRecord, Role, SessionKind, SessionRecord, message_at
from tasks.samples import _corpus as corpus


def generate_bulk(
    n_sessions: int,
    messages_per_session: int,
    *,
    start: datetime,
    end: datetime,
    namespaces: int = 100,
    seed: int = 1,
) -> Iterator[tuple[SessionRecord, list[MessageRecord]]]:
    """Synthetic sessions for benchmarks: skewed namespaces, timestamps in [start, end]."""
    _check_bulk(n_sessions, messages_per_session, start, end, namespaces)
    return _bulk(n_sessions, messages_per_session, start, end, namespaces, seed)


def _bulk(
    n_sessions: int,
    messages_per_session: int,
    start: datetime,
    end: datetime,
    namespaces: int,
    seed: int,
) -> Iterator[tuple[SessionRecord, list[MessageRecord]]]:
    rng = random.Random(seed)
    names = [f"ns-{i:03d}" for i in range(namespaces)]
    weights = list(itertools.accumulate(1.0 / (i + 1) ** 1.1 for i in range(namespaces)))
    window = (end - start).total_seconds()
    for index in range(n_sessions):
        words = {key: rng.choice(values) for key, values in corpus.BULK_WORDS.items()}
        kind: SessionKind = "subagent" if rng.random() < 0.05 else "direct"
        session = SessionRecord(
            id=f"bulk-{seed}-{index:06d}",
            namespace=rng.choices(names, cum_weights=weights)[0],
            agent=f"agent-{index % 7}",
            kind=kind,
            title="About the {thing}".format_map(words),
        )
        yield session, _bulk_messages(session, messages_per_session, words, start, window, rng)


def _check_bulk(sessions: int, messages: int, start: datetime, end: datetime, ns: int) -> None:
    if sessions < 0 or messages < 0:
        raise ValueError("n_sessions and messages_per_session must not be negative")
    if not 1 <= ns <= 1000:
        raise ValueError(f"namespaces must be between 1 and 1000, got {ns}")
    if start.utcoffset() is None or end.utcoffset() is None:
        raise ValueError("start and end need a UTC offset")
    if end < start:
        raise ValueError(f"end {end.isoformat()} is before start {start.isoformat()}")


def _bulk_messages(
    session: SessionRecord,
    count: int,
    words: dict[str, str],
    start: datetime,
    window: float,
    rng: random.Random,
) -> list[MessageRecord]:
    span = min(window, count * 240.0)
    origin = rng.random() * (window - span)
    user = session.agent if session.kind == "subagent" else f"user-{session.namespace}"
    speakers: tuple[tuple[Role, str], ...] = (("user", user), ("assistant", session.agent))
    messages = []
    for i in range(count):
        role, speaker = speakers[i % 2]
        offset = origin + span * (i + 0.9 * rng.random()) / count
        at = start + timedelta(seconds=offset)
        messages.append(
            message_at(
                at,  # generated history: each message is its own now
                id=f"m{i + 1}",
                role=role,
                speaker=speaker,
                content=_bulk_text(words, rng),
                timestamp=at,
            )
        )
    return messages


def _bulk_text(words: dict[str, str], rng: random.Random) -> str:
    parts = [rng.choice(corpus.BULK_SENTENCES)]
    size = len(parts[0])
    while size < 80 or (size < 200 and rng.random() < 0.35):
        parts.append(rng.choice(corpus.BULK_SENTENCES))
        size += len(parts[-1]) + 1
    text = " ".join(parts).format_map(words)
    return text if len(text) <= 300 else text[:300].rsplit(" ", 1)[0]
