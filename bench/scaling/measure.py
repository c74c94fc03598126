"""The figures of one scale store: search, priming and document search latency, query
embedding, planning, catalog and sizes, ``archivist status``, vacuum."""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from bench.scaling.build import AS_OF, Plan, semantic
from storage.embedding import Embedder, HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever, SearchOptions

Figures = dict[str, str]
DOCS, ALL = SearchOptions(kinds=["doc"]), SearchOptions()
SAMPLE = text(
    "SELECT content FROM memories WHERE namespace = :ns AND kind <> 'episode' "
    "ORDER BY id OFFSET :skip LIMIT 1"
)
CHUNK_SAMPLE = text(
    "SELECT text FROM document_chunks WHERE namespace = :ns ORDER BY id OFFSET :skip LIMIT 1"
)


def percentiles(samples: Sequence[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return f"p50 {q[49]:6.2f}  p95 {q[94]:6.2f}  p99 {q[98]:6.2f} ms"


class CpuMeter:
    """CPU per query of a timed phase: this process's (the retriever's Python and driver)
    and, where ``server`` reads it, the database server's (its processes, from /proc)."""

    def __init__(self, server: Callable[[], float | None]) -> None:
        self.server = server
        self.started = (time.process_time(), server())

    def per_query(self, queries: int) -> str:
        client = (time.process_time() - self.started[0]) * 1000 / queries
        then, now = self.started[1], self.server()
        served = (
            "" if then is None or now is None else f", server {(now - then) * 1000 / queries:.1f}"
        )
        return f"; CPU/query: client {client:.1f}{served} ms"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


class Precomputed:
    """An embedder that looks vectors up: latency without the query's embedding."""

    def __init__(self, inner: Embedder, texts: Sequence[str]) -> None:
        self.name, self.dim = inner.name, inner.dim
        self.min_cosine = float(getattr(inner, "min_cosine", 0.0))
        self._vectors = {t: inner.embed_query(t) for t in texts}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._vectors[text]
        return vector


@dataclass
class Workload:
    """Queries: (namespace, text), picked uniformly and by size."""

    uniform: list[tuple[str, str]] = field(default_factory=list)
    skewed: list[tuple[str, str]] = field(default_factory=list)


def workload(
    engine: Engine,
    names: list[str],
    sizes: list[int],
    count: int,
    *,
    chunks: bool = False,
    seed: int = 34,
) -> Workload:
    """``count`` queries of each pick, 3-6 words of a row of the namespace."""
    rng = random.Random(seed if not chunks else seed + 1)
    size_of = dict(zip(names, sizes, strict=True))
    picks = {
        "uniform": rng.choices(names, k=count),
        "skewed": rng.choices(names, weights=sizes, k=count),
    }
    out = Workload()
    sample = CHUNK_SAMPLE if chunks else SAMPLE
    with engine.connect() as conn:
        for label, chosen in picks.items():
            for ns in chosen:
                skip = rng.randrange(max(1, size_of[ns] // 2))
                row = conn.execute(sample, {"ns": ns, "skip": skip}).scalar()
                words = str(row or "garden").split()
                cut = rng.randint(0, max(0, len(words) - 6))
                getattr(out, label).append((ns, " ".join(words[cut : cut + rng.randint(3, 6)])))
    return out


class Searcher:
    """Retrievers over one store, their query vectors computed beforehand: the hashing
    embedder's, and the local model's for the semantic namespaces."""

    def __init__(self, engine: Engine, local: Embedder | None, work: Sequence[Workload]) -> None:
        queries = [q for w in work for q in w.uniform + w.skewed]
        settings = RetrievalSettings()
        hashing = [t for ns, t in queries if not semantic(ns)]
        self.hashing = Retriever(engine, Precomputed(HashingEmbedder(), hashing), settings)
        chosen = [t for ns, t in queries if semantic(ns)]
        self.local = (
            Retriever(engine, Precomputed(local, chosen), settings) if local and chosen else None
        )

    def for_namespace(self, ns: str) -> Retriever:
        if semantic(ns) and self.local is not None:
            return self.local
        return self.hashing

    def search(self, ns: str, query: str, options: SearchOptions = ALL) -> None:
        self.for_namespace(ns).search(ns, query, as_of=AS_OF, options=options)

    def prime(self, ns: str, query: str) -> None:
        self.for_namespace(ns).prime(ns, query, as_of=AS_OF)


def fold(engine: Engine) -> None:
    """The searches' pending accesses added to their memories, as the queue drain does
    every 30 s (left unfolded, each search reads them all)."""
    from storage.operations.access import fold_accesses

    with Session(engine) as session, session.begin():
        fold_accesses(session)


def load() -> str:
    """The machine's load average over the last minute (the cores are shared)."""
    return f"  (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"


def latency(
    engine: Engine,
    plan: Plan,
    local: Embedder | None,
    queries: int,
    server_cpu: Callable[[], float | None] = lambda: None,
) -> tuple[Figures, list[str]]:
    """Search, priming and document search over uniform and size-skewed picks, with the
    CPU per query (``server_cpu``: the server's CPU seconds so far, if known); and the
    queries' texts."""
    out: Figures = {}
    work = workload(engine, plan.names(), plan.sizes(), queries)
    chunk_sizes = plan.chunk_sizes()
    chunk_names = plan.names()[: len(chunk_sizes)]
    docs = workload(engine, chunk_names, chunk_sizes, queries, chunks=True) if chunk_sizes else None
    # Warm connections, prepared statements and the server's cache as a server that has been
    # serving has them (a restarted server reads its HNSW indexes from the OS cache page by
    # page): other queries of the same picks, each searched and primed once, before any timing.
    warm = workload(engine, plan.names(), plan.sizes(), queries, seed=1034)
    searcher = Searcher(engine, local, [work, warm] + ([docs] if docs else []))
    fold(engine)
    for ns, q in warm.uniform[:50] + warm.skewed:
        searcher.search(ns, q)
        searcher.prime(ns, q)
    for label in ("uniform", "skewed"):
        picks = getattr(work, label)
        out[f"search, {label} namespaces"] = _phase(engine, picks, searcher.search, server_cpu)
    for label in ("uniform", "skewed"):
        picks = getattr(work, label)
        out[f"priming, {label} namespaces"] = _phase(engine, picks, searcher.prime, server_cpu)
    if docs is not None:
        search_docs = partial(searcher.search, options=DOCS)
        for label in ("uniform", "skewed"):
            picks = getattr(docs, label)
            out[f"document search, {label} namespaces with documents"] = (
                f"{_phase(engine, picks, search_docs, server_cpu)}, {len(chunk_names):,} namespaces"
            )
    return out, [q for _, q in work.uniform + work.skewed]


def _phase(
    engine: Engine,
    picks: Sequence[tuple[str, str]],
    call: Callable[[str, str], object],
    server_cpu: Callable[[], float | None],
) -> str:
    """One timed phase: ``call`` on each (namespace, query) pick, access records folded
    first; its latency percentiles, the load and the CPU per query."""
    fold(engine)
    cpu = CpuMeter(server_cpu)
    samples = [timed(partial(call, ns, q)) for ns, q in picks]
    return percentiles(samples) + load() + cpu.per_query(len(picks))


def query_embedding(local: Embedder | None, queries: Sequence[str]) -> Figures:
    """What embedding the query costs, apart (the searches above exclude it)."""
    out: Figures = {}
    embedders: list[tuple[str, Embedder]] = [("hashing", HashingEmbedder())]
    if local is not None:
        local.embed_query(queries[0])
        embedders.append(("local model", local))
    # Texts no search embedded before (the searches' vectors are cached in-process).
    fresh = [f"{q} (item {i})" for i, q in enumerate(queries)]
    for label, embedder in embedders:
        samples = [timed(partial(embedder.embed_query, q)) for q in fresh]
        out[f"query embedding, {label}"] = percentiles(samples)
    return out


CATALOG = {
    "pg_class rows": "SELECT count(*) FROM pg_class",
    "indexes (pg_index rows)": "SELECT count(*) FROM pg_index",
    "indexes on memories": "SELECT count(*) FROM pg_indexes WHERE tablename = 'memories'",
    "HNSW indexes on memories": (
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'memories' "
        "AND indexdef LIKE '%USING hnsw%'"
    ),
    "HNSW indexes on document_chunks": (
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'document_chunks' "
        "AND indexdef LIKE '%USING hnsw%'"
    ),
    "catalog size (pg_catalog)": (
        "SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'pg_catalog' AND c.relkind = 'r'"
    ),
    "database size": "SELECT pg_size_pretty(pg_database_size(current_database()))",
}
SIZES = """
SELECT c.relname,
       pg_size_pretty(pg_relation_size(c.oid)) AS heap,
       pg_size_pretty(pg_indexes_size(c.oid)) AS indexes,
       pg_size_pretty(coalesce((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i
                       JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am a ON a.oid = x.relam
                       WHERE i.indrelid = c.oid AND a.amname = 'hnsw'), 0)) AS hnsw,
       pg_size_pretty(pg_total_relation_size(c.oid)) AS total,
       c.reltuples::bigint AS rows
FROM pg_class c WHERE c.relname = ANY(:tables) ORDER BY pg_total_relation_size(c.oid) DESC
"""
TABLES = [
    "memories",
    "document_chunks",
    "episodes",
    "chat_messages",
    "chat_sessions",
    "memory_access_log",
    "documents",
]


def catalog(engine: Engine) -> Figures:
    """How many relations and indexes the catalog holds, and how large tables are."""
    out: Figures = {}
    with engine.connect() as conn:
        for label, sql in CATALOG.items():
            out[label] = str(conn.execute(text(sql)).scalar())
        for r in conn.execute(text(SIZES), {"tables": TABLES}):
            out[f"size {r.relname}"] = (
                f"{r.rows:,} rows: heap {r.heap}, indexes {r.indexes} (HNSW {r.hnsw}), "
                f"total {r.total}"
            )
    return out


PLAN_WALK = """
EXPLAIN (ANALYZE, FORMAT JSON)
SELECT id FROM memories WHERE namespace = :ns AND ann_indexed
ORDER BY embedding <=> CAST(:q AS vector) LIMIT 100
"""
PLAN_POINT = (
    "EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM memories WHERE namespace = :ns AND id = 1"
)


def planning(engine: Engine, plan: Plan, extra: int = 0) -> Figures:
    """Planning time of statements on memories: the HNSW walk of the largest namespace
    (planned for it, as search plans it), and a point lookup, which any statement on
    memories pays (the planner reads every index's definition, partial ones included).

    ``extra``: measured again inside a transaction (rolled back) that first gave that many
    more namespaces (the smallest) the HNSW indexes of a large one (two on memories: all
    its rows, and those but turns), empty (none of their rows is flagged): what planning
    would pay with that many more large namespaces."""
    out: Figures = {}
    q = "[" + ",".join(["0.05"] * 384) + "]"
    with engine.connect() as conn:
        if extra:
            from storage.operations.ann import create_namespace_index

            for name in plan.names()[-extra:]:
                create_namespace_index(Session(bind=conn), name)
            total = conn.execute(text(CATALOG["HNSW indexes on memories"])).scalar()
            out["HNSW indexes on memories, with the extra ones"] = str(total)
        conn.execute(text("SET enable_seqscan = off"))
        conn.execute(text("SET hnsw.iterative_scan = relaxed_order"))
        for label, sql, ns in (
            ("HNSW walk, largest namespace", PLAN_WALK, plan.names()[0]),
            ("point lookup on memories", PLAN_POINT, plan.names()[-1]),
        ):
            times, run = [], []
            for _ in range(30):
                found = conn.execute(text(sql), {"ns": ns, "q": q}).scalar()
                doc = found[0] if isinstance(found, list) else json.loads(str(found))[0]
                times.append(float(doc["Planning Time"]))
                run.append(float(doc["Execution Time"]))
            out[f"planning, {label}" + (" (extra indexes)" if extra else "")] = (
                f"median {statistics.median(times):.3f} ms (execution "
                f"{statistics.median(run):.3f} ms)"
            )
        conn.rollback()
    return out


def status(url: str, workdir: Path) -> Figures:
    """``archivist status`` as a process, against the store (wall time, best of 3)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCHIVIST_", "PREFECT_API"))}
    env |= {
        "ARCHIVIST_DATABASE_URL": url,
        "ARCHIVIST_DATA_DIR": str(workdir / "status"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
    }
    command = [str(Path(sys.executable).with_name("archivist")), "status"]
    best, lines = float("inf"), 0
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        best = min(best, time.perf_counter() - started)
        if done.returncode != 0:
            return {"archivist status": f"failed ({done.returncode}): {done.stderr[-300:]}"}
        lines = len(done.stdout.splitlines())
    return {"archivist status": f"{best:.2f} s wall, best of 3 ({lines} lines printed)"}


def vacuum(engine: Engine, label: str) -> Figures:
    """A plain VACUUM of memories and of document chunks (every index is visited)."""
    out: Figures = {}
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in ("memories", "document_chunks"):
            started = time.perf_counter()
            conn.execute(text(f"VACUUM {table}"))
            out[f"VACUUM {table} ({label})"] = f"{time.perf_counter() - started:.1f} s"
    return out
