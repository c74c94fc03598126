"""Ageing in shards: shards running at once end as one run does, and a shard never takes
over another shard's unfinished work. The flow's shards, one after another: test_aging_flow."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from threading import Barrier

from storage.archive import EARLIEST, MemoryReader, Page, fetch_memories
from storage.embedding import HashingEmbedder
from storage.kernel.shards import Scope, Shard
from storage.server.engine import Store
from tasks.aging import ColdStore, archive_old, compress_old, cutoffs, delete_old, write_part
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import AS_OF, column, local_cold, scalar
from tests.tasks.aging.sharding import NAMESPACES, age, seed, state

CUTOFF = AS_OF - timedelta(days=365)


def test_the_test_namespaces_fill_every_shard_of_four() -> None:
    shard_of = {ns: str(s) for ns in NAMESPACES for s in Shard.all(4) if s.holds(ns)}
    assert shard_of == {"alice": "3/4", "bob": "1/4", "carol": "1/4", "dave": "4/4", "erin": "2/4"}


def would_do(store: Store, cold: ColdStore, shard: Shard | None) -> list[int]:
    """A dry run's counts: sessions to compress, rows to archive, rows and files to delete."""
    when = cutoffs(AS_OF, store.settings.aging)
    embedder = HashingEmbedder(store.settings.embedding.dim)
    compress = compress_old(
        store.engine, cold, embedder, when.compress, 500, Scope(shard=shard, dry_run=True)
    )
    archive = archive_old(store.engine, cold, when.archive, 4, Scope(shard=shard, dry_run=True))
    delete = delete_old(
        store.engine, cold, when.delete, Scope(shard=shard, dry_run=True), enabled=True
    )
    deleted = delete.hot_rows + delete.archived_rows + delete.transcripts
    return [compress.sessions, archive.candidates, deleted]


def test_four_shards_count_and_run_at_once_as_one_unsharded_run(
    store: Store, new_store: Callable[[str], Store], tmp_path: Path
) -> None:
    whole, whole_cold = new_store("whole"), local_cold(tmp_path / "whole")
    cold = local_cold(tmp_path)
    seed(store, cold)
    seed(whole, whole_cold)
    counted = {shard: would_do(store, cold, shard) for shard in [None, *Shard.all(4)]}
    assert all(n > 0 for n in counted[None])
    assert [sum(c[i] for s, c in counted.items() if s) for i in range(3)] == counted[None]
    age(whole, whole_cold)
    start = Barrier(4)

    def run(shard: Shard) -> None:
        start.wait(30)  # all four begin together
        age(store, cold, shard)

    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(run, shard) for shard in Shard.all(4)]:
            done.result()

    expected = state(whole, whole_cold)
    assert sorted(expected) == sorted(NAMESPACES)
    assert all(len(expected[ns]["archived"]) == 9 for ns in NAMESPACES)  # every step had work
    assert all(len(expected[ns]["sessions"]) == 2 for ns in NAMESPACES)  # one deleted each
    assert state(store, cold) == expected


def test_a_shard_leaves_the_unfinished_file_of_another_shard_to_that_shard(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    bob = put(store, "bob", [f"bob old fact {i}" for i in range(5)], AS_OF - timedelta(days=400))
    put(store, "alice", [f"alice old fact {i}" for i in range(3)], AS_OF - timedelta(days=400))
    with MemoryReader(store.engine) as reader:
        part = fetch_memories(reader, "bob", (EARLIEST, CUTOFF), Page(0, 100))
    entry = write_part(store.engine, cold, part)  # bob's shard is writing it now (or died)

    alices = archive_old(store.engine, cold, CUTOFF, 100, Scope(shard=Shard(3, 4)))
    by_name = archive_old(store.engine, cold, CUTOFF, 100, Scope("alice"))

    assert (alices.rows_archived, alices.recovered, alices.discarded) == (3, 0, 0)
    assert (by_name.rows_archived, by_name.recovered, by_name.discarded) == (0, 0, 0)
    assert scalar(store, "SELECT status FROM archive_manifest WHERE id = :i", i=entry.id) == (
        "written"
    )
    assert cold.verify(entry.uri, entry.row_count, entry.checksum)
    assert sorted(column(store, "SELECT id FROM memories WHERE namespace = 'bob'")) == bob
    bobs = archive_old(store.engine, cold, CUTOFF, 100, Scope(shard=Shard(1, 4)))
    assert (bobs.recovered, bobs.rows_archived) == (1, 5)
    assert column(store, "SELECT count(*) FROM memories") == [0]
