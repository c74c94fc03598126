"""Benchmark of documents added over the HTTP API or MCP: the door and the drain, by size.

    .venv/bin/python bench/docs_upload.py [--sizes 65536,1048576,4194304]
        [--embedder local|hashing] [--keep]

For each size, a Markdown document of that many bytes (sections and paragraphs of
synthetic chat text) is queued as ``ADD_DOCUMENT`` (what ``POST .../documents`` and MCP's
``add_document`` do: the queue's door, the documents' rules, one insert) and drained by one
``drain_once`` (what ``archivist worker`` runs: parse, chunk, embed and write in the
drain's transaction). Prints the enqueue's milliseconds, the drain's seconds and chunks:
how long one document holds a drain's transaction, against the queue's stuck timeout
(``ARCHIVIST_QUEUE__STUCK_AFTER_SECONDS``). A work dir under /tmp, deleted at the end
unless ``--keep``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module: put the repository root there instead.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import atexit
import os
import random
import shutil
import tempfile
import time

from sqlalchemy.orm import Session

from bench.retrieval import texts
from storage import queue
from storage.embedding import make_embedder
from storage.kernel.settings import DocumentSettings, EmbeddingSettings, Settings
from storage.server.engine import open_store
from storage.server.migrate import upgrade
from tasks.queue import drain_once


def markdown(size: int, rng: random.Random) -> str:
    """A Markdown document of ``size`` UTF-8 bytes: headed sections of paragraphs."""
    pool = texts(2000)
    parts, total, section = [], 0, 0
    while total < size:
        if section % 6 == 0:
            parts.append(f"## Section {section // 6}")
        parts.append(" ".join(rng.choice(pool) for _ in range(rng.randint(2, 6))))
        section += 1
        total += len(parts[-1].encode("utf-8")) + 2
    return "\n\n".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="65536,1048576,4194304")
    parser.add_argument("--embedder", choices=["local", "hashing"], default="hashing")
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-upload-"))
    if not args.keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    settings = Settings(
        data_dir=workdir,
        embedding=EmbeddingSettings(provider=args.embedder),
        documents=DocumentSettings(max_upload_bytes=max(sizes)),
    )
    store = open_store(settings)
    upgrade(store.engine, settings)
    embedder = make_embedder(settings.embedding)
    rng = random.Random(7)
    print(f"embedder {embedder.name}")
    print(f"{'bytes':>9}  {'enqueue ms':>10}  {'drain s':>8}  {'chunks':>6}")
    for n, size in enumerate(sizes):
        body = {"name": f"doc-{n}.md", "text": markdown(size, rng)}
        started = time.perf_counter()
        with Session(store.engine) as session, session.begin():
            queue.enqueue(session, "bench", "ADD_DOCUMENT", body, settings=settings)
        queued = time.perf_counter() - started
        started = time.perf_counter()
        report = drain_once(store.engine, embedder, settings, "bench")
        drained = time.perf_counter() - started
        with Session(store.engine) as session:
            chunks = queue.item_status(session, "bench", n + 1) or {}
        written = (chunks.get("result") or {}).get("chunks")
        if report.completed != 1:
            raise SystemExit(f"the document of {size} bytes was not stored: {report.errors}")
        print(f"{size:>9}  {queued * 1000:>10.1f}  {drained:>8.2f}  {written!s:>6}")
    print(f"data dir: {workdir}")


if __name__ == "__main__":
    main()
