"""Benchmark of knowledge documents: ingest throughput, and search with chunks mixed in.

    .venv/bin/python bench/docs.py [--documents 1000] [--memories 100000] [--chunks 50000]
        [--queries 500] [--embedder local|hashing] [--keep]

1. Ingest: ``--documents`` Markdown files (sections and paragraphs of synthetic chat text,
   about 4 KB each) written to a folder and ingested by ``tasks.documents`` as
   ``archivist docs ingest`` does (read, parse, chunk, embed, one transaction per file);
   prints files/s and chunks/s, then the unchanged re-ingest's time.
2. Search: the store of bench/retrieval.py (``--memories`` in 1,000 Zipf-sized namespaces)
   plus ``--chunks`` document chunks spread over the same namespaces by the same skew
   (written straight into ``document_chunks``, 25 per document), then ``archivist index``'s
   step (memories and chunks of large namespaces into their HNSW indexes). Prints search
   p50/p95/p99 (query embedding included, access recorded) for the default search
   (memories and chunks mixed), memories only, and chunks only, over the queries of
   ``bench.retrieval.workload`` drawn from memories and chunks alike, after one untimed
   pass over them all (connections, term statistics); then the same with every chunk taken
   out of the HNSW index (exact scans), so both plans are timed in one run.

A work dir under /tmp, deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module: put the repository root there instead (bench.retrieval).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import atexit
import os
import random
import shutil
import tempfile
import time
from datetime import timedelta
from functools import partial
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from bench.retrieval import NOW, load, namespace_sizes, percentiles, texts, timed, workload
from storage import documents as store_docs
from storage.embedding import Embedder, make_embedder
from storage.kernel.settings import EmbeddingSettings, Settings
from storage.retrieval import KINDS, Retriever, SearchOptions
from storage.server.engine import open_store
from storage.server.migrate import upgrade
from tasks.ann_index import refresh_ann_index
from tasks.documents import Chunking, IngestRequest, Span, embedded, ingest_documents

PER_DOCUMENT = 25  # chunks per document in the search store


def write_documents(folder: Path, count: int) -> None:
    """``count`` Markdown files of 4 sections, each of 3 paragraphs of chat-like text."""
    corpus = texts(count * 24)
    rng = random.Random(5)
    folder.mkdir(parents=True)
    for number in range(count):
        lines = [f"# Handbook {number}"]
        for section in range(4):
            lines.append(f"\n## Part {section}: {rng.choice(corpus)[:40]}\n")
            for _ in range(3):
                lines.append(" ".join(rng.choice(corpus) for _ in range(5)) + "\n")
        (folder / f"doc-{number:04d}.md").write_text("\n".join(lines), encoding="utf-8")


def ingest_throughput(engine: Engine, embedder: Embedder, folder: Path, count: int) -> None:
    write_documents(folder, count)
    request = IngestRequest(
        "kb-bench", [str(folder)], Chunking(1200, 150), max_bytes=50 * 1024 * 1024, at=NOW
    )
    ingest = partial(ingest_documents, engine, embedder, request)
    started = time.perf_counter()
    report = ingest()
    spent = time.perf_counter() - started
    print(
        f"ingest  {report.added:,} documents, {report.chunks:,} chunks in {spent:.1f} s: "
        f"{report.added / spent:,.0f} documents/s, {report.chunks / spent:,.0f} chunks/s "
        f"({embedder.name})"
    )
    started = time.perf_counter()
    again = ingest()
    print(
        f"re-ingest of {again.unchanged:,} unchanged documents in "
        f"{time.perf_counter() - started:.2f} s ({again.chunks} chunks written)"
    )


def load_chunks(engine: Engine, embedder: Embedder, total: int) -> dict[str, list[str]]:
    """``total`` chunks over the namespaces ns-0000.., Zipf-sized; each namespace's texts."""
    corpus = texts(total)
    rng = random.Random(9)
    by_ns: dict[str, list[str]] = {}
    start = 0
    for number, size in enumerate(namespace_sizes(total)):
        ns = f"ns-{number:04d}"
        by_ns[ns] = corpus[start : start + size]
        start += size
        for first in range(0, size, PER_DOCUMENT):
            parts = by_ns[ns][first : first + PER_DOCUMENT]
            body = "\n\n".join(parts)
            spans, offset = [], 0  # one paragraph per chunk
            for part in parts:
                spans.append(Span(offset, offset + len(part), part, ""))
                offset += len(part) + 2
            at = NOW - timedelta(days=rng.random() * 400)
            doc = store_docs.NewDocument(
                ns,
                f"bench://{ns}/{first}",
                f"{ns} {first}",
                None,
                "markdown",
                f"{first}",
                len(body),
                body,
                1200,
                150,
                at,
            )
            with Session(engine) as session, session.begin():
                doc_id = store_docs.save_document(session, doc, None)
                if doc_id is None:
                    raise RuntimeError(f"document {first} was not written")
                store_docs.replace_chunks(
                    session, doc_id, ns, embedded(embedder, spans), embedder.name, at
                )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE document_chunks"))
        conn.execute(text("VACUUM ANALYZE documents"))
    return by_ns


def search_latency(
    engine: Engine, embedder: Embedder, settings: Settings, args: argparse.Namespace
) -> None:
    started = time.perf_counter()
    memories = load(engine, namespace_sizes(args.memories), embedder)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    chunks = load_chunks(engine, embedder, args.chunks)
    chunks_s = time.perf_counter() - started
    started = time.perf_counter()
    indexed = refresh_ann_index(engine, settings.retrieval.ann_min_namespace_rows)
    print(
        f"\n== {args.memories:,} memories in {loaded:.1f} s + {args.chunks:,} chunks in "
        f"{chunks_s:.1f} s; HNSW for {len(indexed)} namespaces' large tables "
        f"({sum(indexed.values()):,} rows) in {time.perf_counter() - started:.1f} s"
    )
    work = workload(memories, args.queries // 2) + workload(chunks, args.queries // 2)
    random.Random(3).shuffle(work)
    memory_kinds = [k for k in KINDS if k != "doc"]
    modes = (("mixed", None), ("memories", memory_kinds), ("chunks", ["doc"]))
    timings(Retriever(engine, embedder, settings.retrieval), work, modes)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("UPDATE document_chunks SET ann_indexed = false"))
        conn.execute(text("VACUUM ANALYZE document_chunks"))
    print("every chunk scanned exactly (out of the HNSW index):")
    timings(Retriever(engine, embedder, settings.retrieval), work, (modes[0], modes[2]))


def timings(
    retriever: Retriever, work: list[tuple[str, str]], modes: tuple[tuple[str, Any], ...]
) -> None:
    """Search p50/p95/p99 per mode (kinds), after an untimed pass over every query."""
    for ns, q in work:  # warm caches, connections and both kinds' term statistics
        retriever.search(ns, q, as_of=NOW, record_access=False)
    for label, kinds in modes:
        samples = [
            timed(partial(retriever.search, ns, q, as_of=NOW, options=SearchOptions(kinds=kinds)))
            for ns, q in work
        ]
        hits = [
            retriever.search(
                ns, q, as_of=NOW, record_access=False, options=SearchOptions(kinds=kinds)
            )
            for ns, q in work[:100]
        ]
        with_docs = sum(any(h.doc is not None for h in found) for found in hits)
        print(
            f"search {label:<9}{percentiles(samples)}  ({len(samples)} queries; "
            f"{with_docs} of the first 100 return a chunk)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--embedder", choices=["local", "hashing"], default="hashing")
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    args = parser.parse_args()
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-docs-"))
    if not args.keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    settings = Settings(data_dir=workdir, embedding=EmbeddingSettings(provider=args.embedder))
    store = open_store(settings)
    upgrade(store.engine, settings)
    embedder = make_embedder(settings.embedding)
    ingest_throughput(store.engine, embedder, workdir / "docs", args.documents)
    search_latency(store.engine, embedder, settings, args)
    print(f"data dir: {workdir}")


if __name__ == "__main__":
    main()
