"""Benchmark of memory-sync-daily: 10,000 sessions / 200,000 messages, then a no-op re-run.

    .venv/bin/python bench/sync.py [--sessions 10000] [--messages-per-session 20]
        [--embedder local|hashing] [--shards 4 --workers 2] [--rate-rounds 3] [--rate-only]

Runs on a throw-away embedded PostgreSQL and memory folder (deleted at the end unless
``--keep``), with the chosen embedder (default the local model, its settings from the
environment: ``ARCHIVIST_EMBEDDING__STORE_ENCODER``, ``__THREADS``, ``__BATCH_TOKENS``).
First the embedder alone: memories embedded per second over 5,000 generated messages
(with ``ARCHIVIST_EMBEDDING__TURN_CONTEXT=true``, each as a turn in its context)
(warm, a fresh embedder each round, so repeats within the 5,000 are embedded once as in a
run), printed beside the local model's bulk path as it was before issue 35 (float32,
batches of 64 texts, every text embedded), measured in the same run, with CPU time per
memory; ``--rate-only`` stops there. Then the flow, timed by its own clock (its report's
``seconds``), so Prefect start-up is excluded; load time is printed apart.

With ``--shards N``, the same data is synced twice, each time on a copy of the loaded
database, and both runs are timed by the wall clock: once as one unsharded flow run in
this process, once as ``memory-sharded-run`` with N shards, run as deployment runs by
``--workers`` process workers (``prefect worker start``, each taking at most
ceil(N / workers) runs at once) of a temporary Prefect server. Worker start-up is
excluded; each shard's own process start-up (Prefect's engine, the embedder) is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module (which psycopg imports): put the repository root there
# instead (bench.sharded).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import atexit
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.kernel.records import MessageRecord, SessionRecord
from storage.kernel.settings import Settings
from storage.sessions import record_messages, record_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages-per-session", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument("--shards", type=int, default=0, help="also run it as N shards")
    parser.add_argument("--workers", type=int, default=2, help="process workers for --shards")
    parser.add_argument(
        "--rate-rounds", type=int, default=3, help="rounds of the embedding rate (best printed)"
    )
    parser.add_argument(
        "--rate-only", action="store_true", help="print the embedding rates and stop"
    )
    args = parser.parse_args()
    os.environ["ARCHIVIST_EMBEDDING__PROVIDER"] = args.embedder
    os.environ["ARCHIVIST_EMBEDDED_KEEP_ALIVE_SECONDS"] = "0"  # the work dir goes at exit
    workdir = Path(tempfile.mkdtemp(prefix="archivist-bench-"))
    if not args.keep:  # registered first, so it runs after the embedded server has stopped
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    os.environ["ARCHIVIST_DATA_DIR"] = str(workdir)
    os.environ.pop("ARCHIVIST_DATABASE_URL", None)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")

    from flows.daily_sync import memory_sync_daily
    from storage.server.engine import open_store
    from storage.server.migrate import upgrade
    from tasks.samples import generate_bulk

    settings = Settings()
    if args.rate_only:
        embedding_rate(settings, datetime(2026, 11, 20, 23, 0, tzinfo=UTC), args.rate_rounds)
        return
    store = open_store(settings)
    upgrade(store.engine, settings)
    as_of = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
    data = generate_bulk(
        args.sessions,
        args.messages_per_session,
        start=as_of - timedelta(hours=24),
        end=as_of - timedelta(minutes=1),
    )
    started, total = time.perf_counter(), 0
    batch: list[tuple[SessionRecord, list[MessageRecord]]] = []
    for item in data:
        batch.append(item)
        if len(batch) == 500:
            total += load(store.engine, batch)
            batch = []
    total += load(store.engine, batch)
    load_s = time.perf_counter() - started
    print(f"loaded {args.sessions:,} sessions / {total:,} messages in {load_s:.1f} s")
    embedding_rate(settings, as_of, args.rate_rounds)
    if args.shards:
        from bench.sharded import compare_sharded

        compare_sharded(store, as_of, args.shards, args.workers)
        return

    cpu = CpuMeter(workdir)
    first = memory_sync_daily(as_of=as_of)
    spent = cpu.spent()
    again = memory_sync_daily(as_of=as_of)
    w = first.written
    print(
        f"full run: {first.seconds:.1f} s  ({w.sessions / first.seconds:,.0f} sessions/s, "
        f"{total / first.seconds:,.0f} messages/s; {w.memories_added:,} memories, "
        f"{first.blocks_appended:,} blocks, {len(first.files_touched)} files)"
    )
    per_memory = 1000 / max(w.memories_added, 1)
    cpu_ms = (spent.process + spent.postgres) * per_memory
    print(
        f"full run CPU: {spent.process:.0f} s here (embedding included), {spent.postgres:.0f} s "
        f"PostgreSQL: {spent.process * per_memory:.2f} + {spent.postgres * per_memory:.2f} ms "
        f"per memory, so {1000 / max(cpu_ms, 1e-9):,.0f} memories/s per core busy on it; "
        f"the machine's {os.cpu_count()} CPUs were {spent.busy:.0%} busy "
        f"(load average {', '.join(f'{v:.1f}' for v in os.getloadavg())})"
    )
    print(
        f"no-op re-run: {again.seconds:.2f} s  ({again.unchanged:,} unchanged, "
        f"{again.written.sessions} written)"
    )
    print(f"data dir: {workdir}")


def embedding_rate(settings: Settings, as_of: datetime, rounds: int) -> None:
    """Memories embedded per second by the configured embedder, warm, over 5,000 generated
    messages, beside the local model's float32 path as it was before token batches, the
    int8 graph and per-run deduplication (issue 35), and beside the dynamic int8 graph
    (one text per run) when another graph is configured, measured in this run: rounds
    alternate, and the best of each is printed (the cores may be shared)."""
    from storage.embedding import make_embedder
    from tasks.samples import generate_bulk

    def messages(seed: int) -> list[str]:
        sample = generate_bulk(250, 20, start=as_of - timedelta(hours=24), end=as_of, seed=seed)
        if settings.embedding.turn_context:  # each as the sync embeds a turn, in its context
            return [text for record, messages in sample for text in in_context(record, messages)]
        return [m.content for _, messages in sample for m in messages]

    texts = messages(5)
    local = settings.embedding.provider == "local"
    configured = {"after": settings.embedding}
    if local and settings.embedding.store_encoder not in ("int8", "float32"):
        configured["int8"] = settings.embedding.model_copy(update={"store_encoder": "int8"})
    for embedding in configured.values():
        make_embedder(embedding).embed(messages(6)[:64])  # load the graph
    before = BeforeEmbedder(settings) if local else None
    if before is not None:
        before.embed(messages(6)[:64])
    best: dict[str, tuple[float, float]] = {}
    names, model_texts = {}, {}
    for _ in range(rounds):
        runs: list[tuple[str, Any]] = [(k, make_embedder(e)) for k, e in configured.items()]
        if before is not None:
            runs.insert(0, ("before", before))
        for label, embedder in runs:
            wall, cpu = time.perf_counter(), time.process_time()
            embedder.embed(texts)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if label != "before":
                names[label], model_texts[label] = embedder.name, embedder.computed
            if label not in best or wall < best[label][0]:
                best[label] = (wall, cpu)
    n = len(texts)
    for label, (wall, cpu) in best.items():
        what = {"before": BeforeEmbedder.WHAT, "after": f"{names.get(label)}, now"}.get(
            label, f"{names.get(label)} (one text per run)"
        )
        reached = model_texts.get(label, n)
        print(
            f"{what}: {n / wall:,.0f} memories embedded/s ({n:,} texts, {reached:,} through "
            f"the model; {1000 * cpu / n:.2f} ms of CPU per memory, so {n / cpu:,.0f}/s per "
            f"core busy on it; {os.cpu_count()} CPUs; best of {rounds})"
        )
    if "before" in best:
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        print(f"speed-up: {best['before'][0] / best['after'][0]:.2f}x (load average {load})")


def in_context(record: SessionRecord, messages: list[MessageRecord]) -> list[str]:
    """The texts of a session's turns with ``embedding.turn_context``."""
    from storage.embedding import turn_text

    texts, previous = [], None
    for m in messages:
        turn = f"{m.speaker}: {m.content}"
        texts.append(
            turn_text(turn, title=record.title, occurred_at=m.timestamp, previous=previous)
        )
        previous = turn
    return texts


class BeforeEmbedder:
    """The local model's bulk path before issue 35, rebuilt here for comparison: the
    float32 graph, texts sorted by length in batches of 64, one batch at a time, each run
    on every core (ONNX Runtime's own threads), every text embedded even when repeated."""

    WHAT = "all-MiniLM-L6-v2 before (float32, 64 texts per batch)"

    def __init__(self, settings: Settings) -> None:
        import onnxruntime as ort

        from storage.embedding import default_cache_dir, float32_parts

        cache_dir = settings.embedding.graph_cache_dir or default_cache_dir()
        self.tokenizer, graph = float32_parts(cache_dir)
        options = ort.SessionOptions()
        options.intra_op_num_threads = settings.embedding.threads or 0
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), 384), dtype=np.float32)
        encoded = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), 64):
            chosen = order[start : start + 64]
            width = max(len(encoded[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, i in enumerate(chosen):
                ids[row, : len(encoded[i].ids)] = encoded[i].ids
                mask[row, : len(encoded[i].ids)] = 1
            (hidden,) = self.session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[chosen] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


@dataclass
class CpuSpent:
    process: float
    postgres: float
    busy: float  # the machine's share of busy CPU time, other users' included


class CpuMeter:
    """CPU seconds of this process and of the embedded PostgreSQL (its exited backends
    included) since the meter was made, and how busy the whole machine was."""

    def __init__(self, workdir: Path) -> None:
        import psutil

        pid = int((workdir / "pgdata" / "postmaster.pid").read_text().split()[0])
        self._postgres = psutil.Process(pid)
        self._me = psutil.Process()
        self._start = self._read()

    def _read(self) -> tuple[float, float, float, float]:
        import psutil

        live = 0.0
        for p in [self._postgres, *self._postgres.children(recursive=True)]:
            try:
                live += sum(p.cpu_times()[:2])
            except psutil.NoSuchProcess:
                continue
        exited = self._postgres.cpu_times()
        machine = psutil.cpu_times()
        busy = sum(machine) - machine.idle - getattr(machine, "iowait", 0.0)
        postgres = live + exited.children_user + exited.children_system
        return sum(self._me.cpu_times()[:2]), postgres, busy, sum(machine)

    def spent(self) -> CpuSpent:
        now = self._read()
        delta = [b - a for a, b in zip(self._start, now, strict=True)]
        return CpuSpent(delta[0], delta[1], delta[2] / max(delta[3], 1e-9))


def load(engine: Engine, batch: list[tuple[SessionRecord, list[MessageRecord]]]) -> int:
    """Record sessions and messages in one transaction; returns the message count."""
    with Session(engine) as session, session.begin():
        for record, messages in batch:
            record_session(session, record)
            record_messages(session, record.id, messages)
    return sum(len(m) for _, m in batch)


if __name__ == "__main__":
    main()
