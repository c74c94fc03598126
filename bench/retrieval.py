"""Benchmark of search and priming against a plain pgvector top-k, on the same data.

    .venv/bin/python bench/retrieval.py [--sizes 10000,100000] [--queries 500]
        [--embedder local|hashing]

For each size: memories with 384-d vectors of the chosen embedder (default the local
model; embedding 100,000 texts takes about 5 minutes here) over synthetic chat text in
1,000 namespaces of Zipf-skewed sizes; large namespaces moved into the HNSW index with
the product's own step; then search p50/p95/p99 with the query's embedding included
(access recorded, as in use), and its two parts apart: embedding the query, and the
database work (the same searches with the vectors computed beforehand); priming p50/p95,
a plain ``ORDER BY embedding <=> q LIMIT 10`` per namespace, and the HNSW path's
recall@10 against an exact scan in the largest namespace. Each size's work dir is deleted
at the end unless ``--keep``.
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
import hashlib
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.embedding import Embedder, make_embedder
from storage.kernel.settings import EmbeddingSettings, Settings
from storage.memories import NewMemory, insert_memories
from storage.retrieval import Retriever
from storage.retrieval.candidates import neighbours
from storage.server.engine import open_store
from storage.server.migrate import upgrade
from tasks.ann_index import refresh_ann_index
from tasks.samples import generate_bulk

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
PLAIN = text(
    "SELECT id FROM memories WHERE namespace = :ns "
    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 10"
)
EXACT = text(
    "SELECT id FROM (SELECT id, embedding <=> CAST(:q AS vector) AS d FROM memories "
    "WHERE namespace = :ns OFFSET 0) s ORDER BY d LIMIT 10"
)


def namespace_sizes(total: int, count: int = 1000, skew: float = 1.1) -> list[int]:
    """Zipf-like sizes summing to ``total``: a few large namespaces, many small ones."""
    if total < count:
        raise SystemExit(f"--sizes: {total} memories cannot fill {count} namespaces")
    raw = [1 / (rank + 1) ** skew for rank in range(count)]
    scale = total / sum(raw)
    sizes = [max(1, int(r * scale)) for r in raw]
    sizes[0] += total - sum(sizes)
    return sizes


def texts(total: int) -> list[str]:
    """Varied chat-like texts from the bulk generator."""
    sessions = generate_bulk(total // 20 + 1, 20, start=NOW - timedelta(days=400), end=NOW)
    out = [m.content for _, messages in sessions for m in messages]
    return out[:total]


class Precomputed:
    """An embedder that looks vectors up: searches timed without the model's share."""

    def __init__(self, inner: Embedder, texts: list[str]) -> None:
        self.name, self.dim = inner.name, inner.dim
        self.min_cosine = float(getattr(inner, "min_cosine", 0.0))
        self._vectors = {t: inner.embed_query(t) for t in texts}  # as a search embeds them

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._vectors[text]
        return vector


def load(engine: Engine, sizes: list[int], embedder: Embedder) -> dict[str, list[str]]:
    """Insert the memories; returns each namespace's texts (queries are drawn from them)."""
    corpus = texts(sum(sizes))
    rng = random.Random(7)
    by_ns: dict[str, list[str]] = {}
    start = 0
    for number, size in enumerate(sizes):
        ns = f"ns-{number:04d}"
        chunk = corpus[start : start + size]
        start += size
        by_ns[ns] = chunk
        vectors = embedder.embed(chunk)
        rows = [
            NewMemory(
                namespace=ns,
                kind=rng.choice(["turn"] * 7 + ["fact"] * 2 + ["episode"]),
                content=content,
                content_key=hashlib.sha256(f"{ns}:{i}:{content}".encode()).hexdigest(),
                embedding=vectors[i],
                embedding_model=embedder.name,
                importance=rng.random(),
                vehemence=rng.random() * 0.5,
                session_id=None,
                message_ids=(f"m{i}",),
                run_id=None,
                extractor="bench",
                occurred_at=NOW - timedelta(days=rng.random() * 400),
                created_at=NOW,
            )
            for i, content in enumerate(chunk)
        ]
        with Session(engine) as session, session.begin():
            insert_memories(session, rows)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE memories"))
    return by_ns


def percentiles(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return f"p50 {q[49]:6.2f} ms  p95 {q[94]:6.2f} ms  p99 {q[98]:6.2f} ms"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def workload(by_ns: dict[str, list[str]], count: int) -> list[tuple[str, str]]:
    """Queries: half from namespaces picked by size (heavy users), half uniformly."""
    rng = random.Random(11)
    names = list(by_ns)
    weights = [len(by_ns[n]) for n in names]
    picks = rng.choices(names, weights=weights, k=count // 2) + rng.choices(names, k=count // 2)
    out = []
    for ns in picks:
        words = rng.choice(by_ns[ns]).split()
        cut = rng.randint(0, max(0, len(words) - 6))
        out.append((ns, " ".join(words[cut : cut + rng.randint(3, 6)])))
    return out


def ann_recall(engine: Engine, retriever: Retriever, ns: str, queries: list[str]) -> float:
    """Share of the exact top-10 that the product's dense neighbours find (largest ns)."""
    embedder = retriever.embedder
    found = 0
    for query in queries:
        literal = "[" + ",".join(f"{x:.7g}" for x in embedder.embed_query(query)) + "]"
        with engine.connect() as conn:
            exact = set(conn.execute(EXACT, {"ns": ns, "q": literal}).scalars())
            params = {
                "namespace": ns,
                "qvec": literal,
                "n": 10,
                "tiers": ["fresh"],
                "kinds": None,
                "start": None,
                "end": None,
            }
            got = neighbours(conn, retriever.settings, params, n_indexed=1)["ann_ids"]
        found += len(exact & set(got))
    return found / (10 * len(queries))


def run(size: int, queries: int, *, keep: bool, provider: str) -> None:
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-retrieval-"))
    if not keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    settings = Settings(data_dir=workdir, embedding=EmbeddingSettings(provider=provider))
    store = open_store(settings)
    upgrade(store.engine, settings)
    embedder = make_embedder(settings.embedding)
    sizes = namespace_sizes(size)
    started = time.perf_counter()
    by_ns = load(store.engine, sizes, embedder)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    indexed = refresh_ann_index(store.engine, settings.retrieval.ann_min_namespace_rows)
    index_s = time.perf_counter() - started
    print(
        f"\n== {size:,} memories in {len(sizes)} namespaces (largest {sizes[0]:,}, "
        f"median {sorted(sizes)[len(sizes) // 2]}); loaded in {loaded:.1f} s; "
        f"HNSW for {len(indexed)} namespaces ({sum(indexed.values()):,} rows) in {index_s:.1f} s"
    )
    retriever = Retriever(store.engine, embedder, settings.retrieval)
    work = workload(by_ns, queries)
    for ns, q in work[:50]:  # warm caches and connections
        retriever.search(ns, q, as_of=NOW, record_access=False)
    search = [timed(partial(retriever.search, ns, q, as_of=NOW)) for ns, q in work]
    embedding = [timed(partial(embedder.embed_query, q)) for _, q in work]
    known = Precomputed(embedder, sorted({q for _, q in work}))
    database = Retriever(store.engine, known, settings.retrieval)
    db_only = [timed(partial(database.search, ns, q, as_of=NOW)) for ns, q in work]
    prime = [timed(partial(retriever.prime, ns, q, as_of=NOW)) for ns, q in work[::2]]
    plain = []
    with store.engine.connect() as conn:
        for ns, q in work:
            literal = "[" + ",".join(f"{x:.7g}" for x in embedder.embed_query(q)) + "]"
            plain.append(timed(partial(conn.execute, PLAIN, {"ns": ns, "q": literal})))
    print(f"search       {percentiles(search)}  ({len(search)} queries, {embedder.name})")
    print(f"  embedding  {percentiles(embedding)}  (the query's vector alone)")
    print(f"  database   {percentiles(db_only)}  (hybrid candidates, ranking, access log)")
    print(f"priming      {percentiles(prime)}  ({len(prime)} primings with a first message)")
    print(f"plain pgvector top-10 {percentiles(plain)}  (planner's choice, no filters/fusion)")
    largest = f"ns-{0:04d}"
    if indexed:
        recall = ann_recall(store.engine, retriever, largest, [q for _, q in work[:100]])
        print(f"HNSW dense recall@10 vs exact in {largest}: {recall:.3f}")
    print(f"data dir: {workdir}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the work dirs")
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    args = parser.parse_args()
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    for size in (int(s) for s in args.sizes.split(",")):
        run(size, args.queries, keep=args.keep, provider=args.embedder)


if __name__ == "__main__":
    main()
