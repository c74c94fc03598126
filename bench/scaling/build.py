"""Build a scale store: memories in Zipf-sized namespaces, sessions, episodes, documents,
the HNSW indexes, and one day of new sessions for the sync to take; resumable.

Each step records itself in ``bench_scale_progress`` in the transaction that does its
work, so an interrupted build goes on where it stopped. What a store holds, per namespace
(sizes Zipf-like, exponent 1.1: a few large namespaces, most small):

- sessions of a random age over the last 366 days. A session of the last 91 days keeps
  its turns (tier ``fresh``, 6-10 turn memories, their raw messages in ``chat_messages``),
  an episode and sometimes a fact, a preference or a decision, or a task card; an older
  one was compressed: its episode (tier ``compressed``) and its facts stay. Every
  session has its ``chat_sessions``, ``episodes`` and ``processed_sessions`` rows. The
  sessions of 90 to 91 days are the night's compression, those older than 365 days its
  archival. Salience is decayed as of the night before.
- vectors from the hashing embedder, but the namespaces whose number ends in 7 of 50
  (``ns-00007``, ``ns-00057``, ...) get the local model's, as a semantic subset.
- documents of 20 chunks in the first fifth of the namespaces, Zipf-sized again
  (``chunks`` in all), hashing vectors.
- HNSW: namespaces with at least ``ann_min_namespace_rows`` memories (or chunks) get
  their rows flagged and their own index, built in bulk (flag, then one ``CREATE INDEX``
  in the same transaction), then ``archivist index``'s own step over the rest.
- one day of new sessions (one per namespace, 8 messages), for the sync.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import psycopg
from pgvector.psycopg import register_vector
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from storage.embedding import Embedder, HashingEmbedder
from storage.kernel.records import MessageRecord, SessionRecord
from storage.kernel.settings import EmbeddingSettings, Settings
from storage.memories import NewMemory, insert_memories
from storage.sessions import record_messages, record_session

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
DAY = AS_OF - timedelta(hours=20)  # the new day's sessions start here
SEMANTIC_EVERY, SEMANTIC_AT = 50, 7
BATCH_ROWS = 20_000
Say = Callable[[str], None]

PROGRESS = text(
    "CREATE TABLE IF NOT EXISTS bench_scale_progress "
    "(step text PRIMARY KEY, detail text NOT NULL DEFAULT '', at timestamptz DEFAULT now())"
)
DONE = text("SELECT step, detail FROM bench_scale_progress")
MARK = text(
    "INSERT INTO bench_scale_progress (step, detail) VALUES (:step, :detail) "
    "ON CONFLICT (step) DO UPDATE SET detail = excluded.detail"
)


@dataclass(frozen=True)
class Plan:
    """One store: how many memories in how many namespaces, and document chunks."""

    label: str
    memories: int
    namespaces: int
    chunks: int

    @property
    def database(self) -> str:
        return f"scale_{self.label}"

    def names(self) -> list[str]:
        return [f"ns-{i:05d}" for i in range(self.namespaces)]

    def sizes(self) -> list[int]:
        return zipf_sizes(self.memories, self.namespaces)

    def chunk_sizes(self) -> list[int]:
        """Chunks per namespace, in the first fifth of the namespaces."""
        return zipf_sizes(self.chunks, max(1, self.namespaces // 5)) if self.chunks else []


def zipf_sizes(total: int, count: int, skew: float = 1.1) -> list[int]:
    """Zipf-like sizes summing to ``total``: a few large namespaces, many small ones."""
    raw = [1 / (rank + 1) ** skew for rank in range(count)]
    scale = total / sum(raw)
    sizes = [max(1, int(r * scale)) for r in raw]
    sizes[0] += total - sum(sizes)
    return sizes


def semantic(name: str) -> bool:
    return int(name[3:]) % SEMANTIC_EVERY == SEMANTIC_AT


class Corpus:
    """Chat-like sentences from the bulk sample generator."""

    def __init__(self, size: int = 60_000) -> None:
        from tasks.samples import generate_bulk

        sessions = generate_bulk(size // 20, 20, start=AS_OF - timedelta(days=30), end=AS_OF)
        self.lines = sorted({m.content for _, messages in sessions for m in messages})

    def pick(self, rng: random.Random, n: int = 1) -> str:
        return " ".join(rng.choice(self.lines) for _ in range(n))


def session_rows(name: str, size: int, corpus: Corpus) -> Iterator[dict[str, Any]]:
    """The memories of a namespace, session by session, ``size`` of them."""
    rng = random.Random(name)
    made, number = 0, 0
    while made < size:
        age = timedelta(days=rng.random() * 366)
        start = AS_OF - age
        sid = f"{name}-s{number:05d}"
        number += 1
        recent = age < timedelta(days=91)  # the sessions of 90-91 days: tonight's compression
        kinds = ["turn"] * rng.randint(6, 10) if recent else []
        kinds.append("episode")
        if rng.random() < 0.5:
            kinds.append(rng.choice(["fact", "fact", "preference", "decision"]))
        if recent and rng.random() < 0.05:
            kinds.append("task_card")
        for i, kind in enumerate(kinds[: size - made]):
            at = start + timedelta(minutes=i)
            content = corpus.pick(rng, 1 if kind == "turn" else 2)
            if kind == "episode":
                content = "Summary: " + content
                at = start + timedelta(minutes=len(kinds))
            yield {
                "kind": kind,
                "content": content,
                "session": sid,
                "message": f"m{i}" if kind == "turn" else None,
                "at": at,
                "tier": "fresh",
                "importance": round(rng.random(), 3),
                "vehemence": round(rng.random() * 0.5, 3),
            }
        made += len(kinds[: size - made])


class Builder:
    """Builds one ``Plan``'s store at ``url``, step by step, skipping steps done before."""

    def __init__(self, plan: Plan, url: str, say: Say) -> None:
        self.plan, self.url, self.say = plan, url, say
        self.settings = Settings(database_url=url, embedding=EmbeddingSettings(provider="hashing"))
        self.engine = create_engine(url, pool_size=2)
        self.hashing: Embedder = HashingEmbedder()
        self._local: Embedder | None = None

    def local(self) -> Embedder:
        if self._local is None:
            from storage.embedding import make_embedder

            self._local = make_embedder(EmbeddingSettings(provider="local"))
        return self._local

    def done(self) -> dict[str, str]:
        with self.engine.begin() as conn:
            conn.execute(PROGRESS)
            return {r.step: r.detail for r in conn.execute(DONE)}

    def build(self) -> None:
        from storage.server.migrate import upgrade

        upgrade(self.engine, self.settings)
        done = self.done()
        steps: list[tuple[str, Callable[[dict[str, str]], None]]] = [
            ("memories", self.memories),
            ("sessions", self.sessions),
            ("chunks", self.chunks),
            ("hnsw", self.hnsw),
            ("decay", self.decay),
            ("day", self.day),
        ]
        for step, run in steps:
            if step in done:
                continue
            started = time.perf_counter()
            run(done)
            with self.engine.begin() as conn:
                conn.execute(
                    MARK, {"step": step, "detail": f"{time.perf_counter() - started:.0f} s"}
                )
            self.say(f"{self.plan.label}: {step} done in {time.perf_counter() - started:.0f} s")

    def memories(self, done: dict[str, str]) -> None:
        corpus = Corpus()
        names, sizes = self.plan.names(), self.plan.sizes()
        batches, current, rows = [], [], 0
        for name, size in zip(names, sizes, strict=True):
            current.append((name, size))
            rows += size
            if rows >= BATCH_ROWS:
                batches.append(current)
                current, rows = [], 0
        if current:
            batches.append(current)
        started, loaded = time.perf_counter(), 0
        for number, batch in enumerate(batches):
            loaded += sum(size for _, size in batch)
            if f"memories:{number}" in done:
                continue
            self._load_batch(batch, corpus)
            with Session(self.engine) as session, session.begin():
                session.execute(MARK, {"step": f"memories:{number}", "detail": ""})
            rate = loaded / max(time.perf_counter() - started, 1e-9)
            self.say(
                f"{self.plan.label}: memories {loaded:,}/{self.plan.memories:,} "
                f"(batch {number + 1}/{len(batches)}, {rate:,.0f}/s)"
            )

    def _load_batch(self, batch: list[tuple[str, int]], corpus: Corpus) -> None:
        rows: list[NewMemory] = []
        for name, size in batch:
            made = list(session_rows(name, size, corpus))
            embedder = self.local() if semantic(name) else self.hashing
            vectors = embedder.embed([r["content"] for r in made])
            for i, r in enumerate(made):
                key = hashlib.sha256(f"{name}:{i}".encode()).hexdigest()
                rows.append(
                    NewMemory(
                        namespace=name,
                        kind=r["kind"],
                        content=r["content"],
                        content_key=key,
                        embedding=vectors[i],
                        embedding_model=embedder.name,
                        importance=r["importance"],
                        vehemence=r["vehemence"],
                        session_id=r["session"],
                        message_ids=(r["message"],) if r["message"] else (),
                        run_id=None,
                        extractor="bench",
                        occurred_at=r["at"],
                        created_at=r["at"],
                    )
                )
        sessions = {(r.session_id, r.namespace) for r in rows}
        with Session(self.engine) as session, session.begin():
            session.execute(
                text(
                    "INSERT INTO chat_sessions (id, namespace, agent, kind) "
                    "SELECT id, ns, 'aria', 'direct' FROM unnest("
                    "CAST(:ids AS text[]), CAST(:nss AS text[])) AS s(id, ns)"
                ),
                {"ids": [s for s, _ in sessions], "nss": [n for _, n in sessions]},
            )
            insert_memories(session, rows, half_life_days=self.settings.aging.half_life_days)
            session.execute(
                text(
                    "UPDATE memories SET tier = 'compressed' WHERE kind = 'episode' "
                    "AND namespace = ANY(:names) AND occurred_at < :cut"
                ),
                {"names": [n for n, _ in batch], "cut": AS_OF - timedelta(days=91)},
            )

    def sessions(self, _done: dict[str, str]) -> None:
        """Sessions, raw messages of the last 90 days, episodes and processed states, made
        in SQL from the memories."""
        with Session(self.engine) as session, session.begin():
            for statement in SESSION_SQL:
                session.execute(text(statement))

    def chunks(self, _done: dict[str, str]) -> None:
        corpus = Corpus(20_000)
        sizes = self.plan.chunk_sizes()
        conn = psycopg.connect(self.url.replace("postgresql+psycopg://", "postgresql://", 1))
        register_vector(conn)
        try:
            loaded = 0
            for number, size in enumerate(sizes):
                name = f"ns-{number:05d}"
                self._load_chunks(conn, name, size, corpus)
                loaded += size
                if number % 200 == 0 or number == len(sizes) - 1:
                    self.say(f"{self.plan.label}: chunks {loaded:,}/{self.plan.chunks:,}")
            conn.commit()
        finally:
            conn.close()

    def _load_chunks(
        self, conn: psycopg.Connection[Any], name: str, size: int, corpus: Corpus
    ) -> None:
        rng = random.Random("doc-" + name)
        texts = [corpus.pick(rng, 3) for _ in range(size)]
        vectors = self.hashing.embed(texts)
        with conn.cursor() as cur:
            for first in range(0, size, 20):
                part = texts[first : first + 20]
                body = "\n\n".join(part)
                cur.execute(
                    "INSERT INTO documents (namespace, uri, title, format, content_hash, size, "
                    "text, chunk_size, overlap, ingested_at, updated_at) VALUES "
                    "(%s, %s, %s, 'md', %s, %s, %s, 1200, 150, %s, %s) RETURNING id",
                    (
                        name,
                        f"file:///docs/{name}/{first // 20}.md",
                        f"Doc {first // 20}",
                        hashlib.sha256(body.encode()).hexdigest(),
                        len(body),
                        body,
                        AS_OF,
                        AS_OF,
                    ),
                )
                doc = cast(tuple[int], cur.fetchone())[0]
                with cur.copy(
                    "COPY document_chunks (document_id, namespace, ordinal, heading, text, "
                    "char_start, char_end, content_hash, embedding, embedding_model, "
                    "created_at) FROM STDIN"
                ) as copy:
                    offset = 0
                    for i, chunk in enumerate(part):
                        copy.write_row(
                            (
                                doc,
                                name,
                                i,
                                f"Part {i}",
                                chunk,
                                offset,
                                offset + len(chunk),
                                hashlib.sha256(chunk.encode()).hexdigest(),
                                vectors[first + i],
                                self.hashing.name,
                                AS_OF,
                            )
                        )
                        offset += len(chunk) + 2

    def hnsw(self, done: dict[str, str]) -> None:
        """Large namespaces into their own HNSW indexes, in bulk, then the product's step."""
        from storage.operations.ann import TABLES, create_namespace_index, large_namespaces
        from tasks.ann_index import refresh_ann_index

        min_rows = self.settings.retrieval.ann_min_namespace_rows
        for table in TABLES:
            with Session(self.engine) as session:
                targets = large_namespaces(session, min_rows, table)
            for number, namespace in enumerate(targets):
                step = f"hnsw:{table}:{namespace}"
                if step in done:
                    continue
                started = time.perf_counter()
                with Session(self.engine) as session, session.begin():
                    session.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))
                    session.execute(
                        text(f"UPDATE {table} SET ann_indexed = true WHERE namespace = :ns"),
                        {"ns": namespace},
                    )
                    create_namespace_index(session, namespace, table)
                    session.execute(MARK, {"step": step, "detail": ""})
                self.say(
                    f"{self.plan.label}: HNSW {table} {namespace} ({targets[namespace]:,} rows, "
                    f"{number + 1}/{len(targets)}) in {time.perf_counter() - started:.1f} s"
                )
        started = time.perf_counter()
        refresh_ann_index(self.engine, min_rows)  # term counts, anything left, VACUUM ANALYZE
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for table in ("memories", "document_chunks", "chat_messages", "episodes"):
                conn.execute(text(f"VACUUM (ANALYZE) {table}"))
        self.say(
            f"{self.plan.label}: archivist index step + VACUUM ANALYZE "
            f"{time.perf_counter() - started:.0f} s"
        )

    def decay(self, _done: dict[str, str]) -> None:
        """Salience as last night's decay left it, so tonight's writes only what moved."""
        from storage.kernel.shards import Scope
        from storage.operations.aging import DecayParams
        from tasks.aging import decay

        policy = self.settings.aging
        night = AS_OF - timedelta(days=1)
        params = DecayParams(night, policy.half_life_days, policy.salience_epsilon, Scope())
        decay(self.engine, params, policy.decay_batch)

    def day(self, _done: dict[str, str]) -> None:
        """One day's new sessions, one per namespace, 8 messages each (not yet synced)."""
        from tasks.samples import generate_bulk

        names = self.plan.names()
        generated = generate_bulk(
            len(names), 8, start=DAY, end=AS_OF - timedelta(minutes=1), seed=34
        )
        batch: list[tuple[SessionRecord, list[MessageRecord]]] = []
        for name, (record, messages) in zip(names, generated, strict=True):
            record = record.model_copy(update={"namespace": name, "id": f"{name}-day"})
            batch.append((record, messages))
            if len(batch) == 1000:
                self._record(batch)
                batch = []
        self._record(batch)

    def _record(self, batch: list[tuple[SessionRecord, list[MessageRecord]]]) -> None:
        with Session(self.engine) as session, session.begin():
            for record, messages in batch:
                record_session(session, record)
                record_messages(session, record.id, messages)


SESSION_SQL = (
    """
    INSERT INTO chat_messages (session_id, id, role, speaker, content, ts)
    SELECT session_id, message_ids[1],
           CASE WHEN right(message_ids[1], 1) IN ('0', '2', '4', '6', '8') THEN 'user'
                ELSE 'assistant' END,
           'x', content, occurred_at
    FROM memories WHERE kind = 'turn'
    ON CONFLICT DO NOTHING
    """,
    """
    INSERT INTO episodes (namespace, session_id, memory_id, summary, topics, entities,
        user_state, outcomes, open_threads, importance, vehemence, urgency, sentiment,
        risk, message_count, started_at, ended_at, fingerprint, extractor, created_at)
    SELECT namespace, session_id, id, content, '{}', '{}', '{}', '[]',
           CASE WHEN importance > 0.8 THEN jsonb_build_array(jsonb_build_object(
               'topic', 'follow-up', 'status', 'open', 'context', left(content, 80)))
           ELSE '[]' END,
           importance, vehemence, 0, 0, 0, 8, occurred_at - interval '10 minutes',
           occurred_at, md5(session_id), 'bench', occurred_at
    FROM memories WHERE kind = 'episode'
    ON CONFLICT DO NOTHING
    """,
    """
    INSERT INTO processed_sessions (session_id, namespace, fingerprint, message_count,
                                    last_message_at, processed_as_of)
    SELECT session_id, namespace, md5(session_id), 8, occurred_at, occurred_at
    FROM memories WHERE kind = 'episode'
    ON CONFLICT DO NOTHING
    """,
)
