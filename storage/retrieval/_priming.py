"""Conversation priming (seed 003): recent episodes, open threads, salient facts, entities."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from sqlalchemy import Connection, Engine

from storage.kernel import scoring
from storage.kernel.facts import statement
from storage.kernel.settings import RetrievalSettings
from storage.retrieval._types import Hit, PrimedEpisode, PrimedThread, Priming
from storage.retrieval.candidates import EPISODE_ENTITIES, RECENT_EPISODES, RECORD_ACCESS, TOP_FACTS
from storage.retrieval.explain import Question, cite, passage, sources_line
from storage.retrieval.rank import make_hit

FACT_KINDS = ["fact", "preference", "decision"]
_SCAN = 50


class Searcher(Protocol):
    """What priming needs of a retriever: its store, its settings, a query's vector, search
    in a transaction."""

    engine: Engine
    settings: RetrievalSettings
    shown: Callable[[Hit], Hit] | None

    def query_vector(self, namespace: str, query: str, *, what: str = "query") -> np.ndarray: ...

    def search_in(
        self,
        conn: Connection,
        namespace: str,
        query: str,
        vector: np.ndarray,
        limit: int,
        kinds: Sequence[str] | None,
        now: datetime,
    ) -> list[Hit]: ...


Asked = tuple[str, np.ndarray]  # the first message and its vector


def build_priming(
    retriever: Searcher,
    namespace: str,
    initial_message: str | None,
    now: datetime,
    *,
    record_access: bool,
    conn: Connection | None = None,
    budget: int | None = None,
) -> Priming:
    """Everything priming needs, read in one transaction (``conn``'s, or one of its own);
    within ``budget`` tokens (the local model's) when given: facts first, then
    conversations, open threads and names, each while it fits."""
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    message = (initial_message or "").strip() or None
    # Embedded once for both searches, and before a connection is taken.
    asked = None
    if message:
        asked = (message, retriever.query_vector(namespace, message, what="first message"))
    timings["embedding"] = _lap(clock)
    with _transaction(retriever.engine, conn) as tx:
        rows = tx.execute(RECENT_EPISODES, {"namespace": namespace, "now": now, "scan": _SCAN})
        episodes, threads, episode_ids = _episodes(retriever, list(rows), now)
        timings["episodes"] = _lap(clock)
        facts = _facts(retriever, tx, namespace, asked, now)
        timings["facts"] = _lap(clock)
        entities = _entities(retriever, tx, namespace, asked, now, episodes)
        timings["entities"] = _lap(clock)
        if record_access:
            ids = [h.memory_id for h in facts] + episode_ids
            if ids:
                context = f"prime: {(message or '')[:500]}"
                params = {"namespace": namespace, "ids": ids, "context": context, "at": now}
                tx.execute(RECORD_ACCESS, params)
    if retriever.shown is not None:
        facts = tuple(retriever.shown(hit) for hit in facts)
    if message:  # each conversation by its part that answers the first message
        question = Question.of(message)
        episodes = tuple(replace(e, passage=passage(e.summary, question)) for e in episodes)
    if budget is None:
        formatted = format_priming(namespace, episodes, threads, facts, entities)
        timings["total"] = _lap(clock)
        return Priming(namespace, episodes, threads, facts, entities, formatted, timings)
    parts, formatted, used = within(namespace, (episodes, threads, facts, entities), budget)
    timings["total"] = _lap(clock)
    return Priming(namespace, *parts, formatted, timings, budget, used)


@contextmanager
def _transaction(engine: Engine, conn: Connection | None) -> Iterator[Connection]:
    if conn is not None:
        yield conn
        return
    with engine.begin() as own:
        yield own


def _lap(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _episodes(
    retriever: Searcher, rows: Sequence[Any], now: datetime
) -> tuple[tuple[PrimedEpisode, ...], tuple[PrimedThread, ...], list[int]]:
    settings = retriever.settings
    episodes: list[PrimedEpisode] = []
    ids: list[int] = []
    for row in rows:
        touched = row.last_accessed_at or row.ended_at
        value = scoring.salience(
            row.access_count, (now - touched).total_seconds() / 86400, settings.half_life_days
        )
        if value > settings.prime_min_salience and len(episodes) < settings.prime_episodes:
            episodes.append(
                PrimedEpisode(row.session_id, row.summary, tuple(row.topics), row.ended_at, value)
            )
            if row.memory_id is not None:
                ids.append(row.memory_id)
    return tuple(episodes), _threads(rows, settings.prime_threads), ids


def _threads(rows: Sequence[Any], limit: int) -> tuple[PrimedThread, ...]:
    seen: set[str] = set()
    threads: list[PrimedThread] = []
    for row in rows:  # newest episode first
        for thread in row.open_threads:
            key = thread["context"].casefold()
            if key in seen or len(threads) >= limit:
                continue
            seen.add(key)
            threads.append(
                PrimedThread(
                    row.session_id,
                    thread["topic"],
                    thread["status"],
                    thread["context"],
                    row.ended_at,
                )
            )
    return tuple(threads)


def _facts(
    retriever: Searcher, conn: Connection, namespace: str, asked: Asked | None, now: datetime
) -> tuple[Hit, ...]:
    limit = retriever.settings.prime_facts
    if limit == 0:
        return ()
    if asked is not None:
        found = retriever.search_in(conn, namespace, *asked, limit * 3, FACT_KINDS, now)
        if found:  # else nothing relates to the message: the most important facts instead
            return _distinct(found, limit)
    rows = conn.execute(
        TOP_FACTS, {"namespace": namespace, "kinds": FACT_KINDS, "now": now, "scan": _SCAN * 4}
    ).all()
    weights = {"importance": 1.0, "salience": 1.0}
    half_life = retriever.settings.half_life_days
    hits = [make_hit(row, 0.0, 0.0, 0.0, now, weights, half_life) for row in rows]
    hits.sort(key=lambda h: (-h.factors["importance"] * h.factors["salience"], h.memory_id))
    return _distinct(hits, limit)


def _distinct(hits: Sequence[Hit], limit: int) -> tuple[Hit, ...]:
    """The first ``limit`` hits with distinct text (the same fact told in two sessions,
    which differ only in their closing context and date)."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        key = " ".join(statement(hit.content).casefold().split())
        if key not in seen and len(out) < limit:
            seen.add(key)
            out.append(hit)
    return tuple(out)


def _entities(
    retriever: Searcher,
    conn: Connection,
    namespace: str,
    asked: Asked | None,
    now: datetime,
    episodes: Sequence[PrimedEpisode],
) -> tuple[str, ...]:
    if asked is not None:
        related = retriever.search_in(conn, namespace, *asked, 5, ["episode"], now)
        sessions = [h.session_id for h in related if h.session_id]
    else:
        sessions = [e.session_id for e in episodes]
    rows = conn.execute(EPISODE_ENTITIES, {"namespace": namespace, "sessions": sessions})
    by_session = {r.session_id: r.entities for r in rows}
    ordered = [e for sid in sessions for e in by_session.get(sid, [])]
    return tuple(dict.fromkeys(ordered))[:10]


def format_priming(
    namespace: str,
    episodes: Sequence[PrimedEpisode],
    threads: Sequence[PrimedThread],
    facts: Sequence[Hit],
    entities: Sequence[str],
) -> str:
    """The priming as "what I remember" text for a system prompt; facts labelled
    ``[Memory n]`` (``cite``), their provenance on a closing ``Sources:`` line."""
    if not (episodes or threads or facts):
        return f"I don't remember anything about {namespace} yet."
    cited = cite(facts)
    lines = [f"What I remember about {namespace}:"]
    if episodes:
        lines += ["", "Recent conversations:"]
        lines += [f"- {e.ended_at:%Y-%m-%d}: {e.shown}" for e in episodes]
    if threads:
        lines += ["", "Still open:"]
        lines += [f"- {t.context} (since {t.since:%Y-%m-%d})" for t in threads]
    if facts:
        lines += ["", "Things I know:"]
        lines += [f"- {c.line}" for c in cited]
    if entities:
        lines += ["", "Related: " + ", ".join(entities)]
    if cited:
        lines += ["", sources_line(cited)]
    return "\n".join(lines)


Parts = tuple[tuple[PrimedEpisode, ...], tuple[PrimedThread, ...], tuple[Hit, ...], tuple[str, ...]]
Counter = Callable[[Sequence[str]], list[int]]


def within(
    namespace: str, parts: Parts, budget: int, count: Counter | None = None
) -> tuple[Parts, str, int]:
    """The parts that fit ``budget`` tokens once formatted, their text and its count: the
    facts first (most relevant first), then conversations, open threads and names, each
    taken while the whole text still fits. Nothing fits: no text, 0 tokens."""
    if count is None:
        from storage.embedding import count_tokens

        count = count_tokens
    episodes, threads, facts, entities = parts
    kept: list[list[Any]] = [[], [], [], []]
    text, used = "", 0
    order: list[tuple[int, Any]] = [(2, f) for f in facts] + [(0, e) for e in episodes]
    order += [(1, t) for t in threads] + [(3, e) for e in entities]
    for slot, item in order:
        kept[slot].append(item)
        trial = format_priming(namespace, *kept)
        tokens = count([trial])[0]
        if tokens <= budget:
            text, used = trial, tokens
        else:
            kept[slot].pop()
    chosen: Parts = (tuple(kept[0]), tuple(kept[1]), tuple(kept[2]), tuple(kept[3]))
    return chosen, text, used
