"""Archival to Parquet (local folder and a real local S3), crash recovery, restore, search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.archive import (
    MEMORY_SCHEMA,
    STORED_BYTES_CAST,
    MemoryReader,
    Page,
    VectorBuffer,
    fetch_memories,
    vector_column,
)
from storage.embedding import HashingEmbedder
from storage.kernel.errors import InputError
from storage.kernel.settings import RetrievalSettings
from storage.kernel.shards import Scope
from storage.retrieval import ArchiveReader, Retriever, SearchOptions
from storage.server.engine import Store
from tasks.aging import (
    ColdStore,
    Scratch,
    archive_old,
    by_year,
    commit_part,
    verify_part,
    write_part,
)
from tasks.privacy import restore
from tests.helpers import modules_after_import
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import AS_OF, column, local_cold, s3_cold, scalar
from tests.tasks.files.test_durable import unwritten_pages

CUTOFF = AS_OF - timedelta(days=365)


def seed(store: Store) -> dict[str, list[int]]:
    """Old memories in two namespaces and two years, recent ones, and one pinned old one."""
    ids = {
        "old_a": put(
            store, "alice", [f"alice old fact {i}" for i in range(12)], AS_OF - timedelta(days=400)
        ),
        "older_a": put(
            store, "alice", [f"alice older fact {i}" for i in range(5)], AS_OF - timedelta(days=800)
        ),
        "old_b": put(
            store, "bob", [f"bob old fact {i}" for i in range(7)], AS_OF - timedelta(days=500)
        ),
        "recent": put(store, "alice", ["alice recent fact"], AS_OF - timedelta(days=3)),
        "pinned": put(store, "alice", ["alice pinned old fact"], AS_OF - timedelta(days=700)),
    }
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE memories SET pinned = true WHERE id = :id"), {"id": ids["pinned"][0]}
        )
        conn.execute(text("UPDATE memories SET access_count = 3, salience = 0.5"))
    return ids


def consistent(store: Store, cold: ColdStore, total: int) -> None:
    """Every memory is in exactly one place, and every committed file holds what it says."""
    hot = column(store, "SELECT id FROM memories")
    indexed = column(store, "SELECT memory_id FROM archived_memories")
    in_files: list[int] = []
    with store.engine.connect() as conn:
        files = conn.execute(
            text("SELECT uri, row_count, checksum, status FROM archive_manifest")
        ).all()
    for uri, rows, checksum, status in files:
        assert status == "committed" and cold.verify(uri, rows, checksum)
        in_files += cold.read(uri, ["id"]).column("id").to_pylist()
    assert sorted(indexed) == sorted(in_files)
    assert len(set(hot) | set(in_files)) == len(hot) + len(in_files) == total


def run(store: Store, cold: ColdStore, batch: int = 10_000):
    return archive_old(store.engine, cold, CUTOFF, batch, Scope())


@pytest.mark.parametrize("where", ["local", "s3"])
def test_old_rows_move_to_parquet_partitions_and_leave_the_hot_table(
    store: Store, tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    if where == "s3":
        cold = s3_cold(request.getfixturevalue("s3_options"), request.getfixturevalue("s3_bucket"))
    else:
        cold = local_cold(tmp_path)
    ids = seed(store)

    out = run(store, cold, batch=8)  # several batches

    assert out.rows_archived == 24 and out.candidates == 24
    assert sorted(column(store, "SELECT id FROM memories")) == sorted(ids["recent"] + ids["pinned"])
    consistent(store, cold, 26)
    uris = column(store, "SELECT uri FROM archive_manifest ORDER BY min_id")
    assert all("/memories/namespace=" in u and "/year=" in u for u in uris)
    if where == "local":  # on disk before its rows were deleted
        assert [unwritten_pages(Path(cold.local_path(u))) for u in uris] == [0] * len(uris)
    table = cold.read(uris[0])
    assert table.schema.field("embedding").type.value_type.bit_width == 32
    assert set(table.column("access_count").to_pylist()) == {3}
    assert run(store, cold).rows_archived == 0  # a re-run archives nothing twice
    consistent(store, cold, 26)


def test_pinned_memories_are_never_archived(store: Store, tmp_path: Path) -> None:
    ids = seed(store)
    run(store, local_cold(tmp_path))
    assert ids["pinned"][0] in column(store, "SELECT id FROM memories")


def _first_part(store: Store):
    with MemoryReader(store.engine) as reader:
        old = fetch_memories(
            reader, "alice", (AS_OF - timedelta(days=5000), CUTOFF), Page(0, 10_000)
        )
    return by_year(old)[-1]  # alice's 2025 memories, as the first file of a run would hold


def test_crash_after_verify_before_the_delete_ends_consistent(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    part = _first_part(store)
    entry = write_part(store.engine, cold, part)
    assert verify_part(store.engine, cold, entry)  # ... and the process dies here
    assert scalar(store, "SELECT count(*) FROM memories") == 26

    out = run(store, cold)

    assert out.recovered == 1 and out.rows_archived == 24
    consistent(store, cold, 26)


def test_a_row_a_search_touches_after_the_fetch_is_archived_with_the_new_count(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    part = _first_part(store)
    entry = write_part(store.engine, cold, part)
    assert verify_part(store.engine, cold, entry)
    (hit,) = searcher(store, cold).search("alice", "alice old fact 3", limit=1, as_of=AS_OF)
    touched = hit.memory_id
    assert touched in part.column("id").to_pylist()

    assert commit_part(store.engine, entry, part, AS_OF) == 0  # the file is stale: nothing moves
    assert scalar(store, "SELECT count(*) FROM memories") == 26
    out = run(store, cold)  # the next run drops the stale file and archives the row anew

    assert out.discarded == 1 and out.rows_archived == 24
    consistent(store, cold, 26)
    archived = [cold.read(uri) for uri in column(store, "SELECT uri FROM archive_manifest")]
    counts = {row["id"]: row["access_count"] for table in archived for row in table.to_pylist()}
    assert counts[touched] == 4  # 3 from the seed, 1 from the search


def test_a_row_pinned_after_the_fetch_stays_hot(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    part = _first_part(store)
    pinned = part.column("id")[0].as_py()
    entry = write_part(store.engine, cold, part)
    assert verify_part(store.engine, cold, entry)  # ... the process dies here
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE memories SET pinned = true WHERE id = :id"), {"id": pinned})

    out = run(store, cold)

    assert out.recovered == 0 and out.discarded == 1
    assert pinned in column(store, "SELECT id FROM memories")
    consistent(store, cold, 26)


def test_crash_after_write_before_verify_ends_consistent(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    write_part(store.engine, cold, _first_part(store))  # the process dies before verifying
    assert scalar(store, "SELECT status FROM archive_manifest") == "written"
    run(store, cold)
    consistent(store, cold, 26)


def test_a_damaged_uncommitted_file_is_discarded_and_rewritten(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    entry = write_part(store.engine, cold, _first_part(store))
    cold.fs.pipe_file(cold.local_path(entry.uri), b"torn write")
    out = run(store, cold)
    assert out.discarded == 1
    consistent(store, cold, 26)


def test_a_file_without_manifest_is_overwritten(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    part = _first_part(store)
    from tasks.aging import memories_part

    ids = part.column("id").to_pylist()
    cold.write(memories_part("alice", 2025, min(ids), max(ids), rewrite=False), part.slice(0, 1))
    run(store, cold)
    consistent(store, cold, 26)


def test_hot_leftovers_of_committed_files_are_deleted_not_archived_again(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    run(store, cold)
    uri = column(store, "SELECT uri FROM archive_manifest ORDER BY id")[0]
    one = cold.read(uri).slice(0, 1)
    from storage.archive import insert_rows

    with Session(store.engine) as session, session.begin():
        insert_rows(session, one)  # a copy of an archived row reappears in the hot table
    out = run(store, cold)
    assert out.leftovers_dropped == 1 and out.rows_archived == 0
    consistent(store, cold, 26)


def searcher(store: Store, cold: ColdStore) -> Retriever:
    r = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings(), store.settings.tz)
    r.archive = ArchiveReader(fs=cold.fs)
    return r


def test_include_archived_search_finds_cold_rows_at_lower_priority(
    store: Store, tmp_path: Path
) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    put(store, "alice", ["the dentist appointment with Dr. Okafor"], AS_OF - timedelta(days=600))
    run(store, cold)
    r = searcher(store, cold)

    hot = r.search("alice", "dentist Okafor", as_of=AS_OF, record_access=False)
    cold_hits = r.search(
        "alice",
        "dentist Okafor",
        as_of=AS_OF,
        record_access=False,
        options=SearchOptions(include_archived=True),
    )

    assert all("Okafor" not in h.content for h in hot)
    assert cold_hits[0].content == "the dentist appointment with Dr. Okafor"
    assert cold_hits[0].tier == "archived" and cold_hits[0].factors["archived"] == 1.0
    assert all(h.namespace == "alice" for h in cold_hits)
    bob = r.search(
        "bob",
        "bob old fact",
        as_of=AS_OF,
        record_access=False,
        options=SearchOptions(include_archived=True),
    )
    assert bob and all(h.tier == "archived" for h in bob)  # nothing hot left in bob


def test_restore_brings_a_row_back_with_its_id_and_vector(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    ids = seed(store)
    before = {
        r[0]: r[1:]
        for r in Session(store.engine).execute(
            text("SELECT id, content, embedding::text, access_count FROM memories")
        )
    }
    run(store, cold)
    target = ids["old_a"][3]

    assert restore(store.engine, cold, target, HashingEmbedder(384), actor="test") == 1

    with store.engine.connect() as conn:
        row = conn.execute(
            text("SELECT content, embedding::text, access_count, tier FROM memories WHERE id = :i"),
            {"i": target},
        ).one()
    assert tuple(row[:3]) == before[target] and row.tier == "fresh"
    assert target not in column(store, "SELECT memory_id FROM archived_memories")
    consistent(store, cold, 26)
    hits = searcher(store, cold).search(
        "alice", "alice old fact 3", as_of=AS_OF, record_access=False
    )
    assert hits[0].memory_id == target and hits[0].tier == "fresh"
    assert column(store, "SELECT action FROM audit_log") == ["restore"]
    with pytest.raises(InputError):
        restore(store.engine, cold, target, HashingEmbedder(384), actor="test")


def batch_of(years: list[int]) -> pa.Table:
    """A fetched batch whose rows happened in these years (ids ascending, 4-float vectors)."""
    rows = [
        {
            "id": i + 1,
            "namespace": "alice",
            "content": f"fact {i}",
            "embedding": [float(i), i + 0.25, i + 0.5, -float(i)],
            "message_ids": [f"m{i}"] if i % 2 else [],
            "occurred_at": datetime(year, 6, 1, tzinfo=UTC) + timedelta(minutes=i),
        }
        for i, year in enumerate(years)
    ]
    return pa.Table.from_pylist(rows, schema=MEMORY_SCHEMA)


@pytest.mark.parametrize(
    "years",
    [
        [2023, 2023, 2024, 2024, 2024],  # ids follow time: each year is one run
        [2024, 2023, 2024, 2022, 2023, 2024],  # interleaved, as after a back-fill
        [2024, 2024, 2023, 2023, 2024],  # a year in two runs
        [2023],
    ],
)
def test_a_batch_splits_into_one_table_per_year_with_every_row_intact(years: list[int]) -> None:
    batch = batch_of(years)

    parts = by_year(batch)

    assert [pc.year(p.column("occurred_at")).to_pylist() for p in parts] == [
        [year] * years.count(year) for year in sorted(set(years))
    ]
    assert all(p.schema == MEMORY_SCHEMA for p in parts)
    expected = {row["id"]: row for row in batch.to_pylist()}
    got = [row for p in parts for row in p.to_pylist()]
    assert sorted(row["id"] for row in got) == sorted(expected)
    assert all(row == expected[row["id"]] for row in got)
    for part in parts:
        assert part.column("id").to_pylist() == sorted(part.column("id").to_pylist())


def test_a_fetch_by_year_groups_rows_at_year_edges_and_reuses_vector_memory(
    store: Store,
) -> None:
    new_year = datetime(2024, 1, 1, tzinfo=UTC)
    # Ids against time: only the year puts 2023's last moment before 2024's first.
    early = put(store, "alice", ["first moment of 2024"], new_year)
    late = put(store, "alice", ["last moment of 2023"], new_year - timedelta(microseconds=1))
    older = put(store, "alice", ["mid 2022", "also 2022"], datetime(2022, 6, 1, tzinfo=UTC))
    span = (new_year - timedelta(days=5000), CUTOFF)
    buffer = VectorBuffer()
    with MemoryReader(store.engine) as reader:
        plain = fetch_memories(reader, "alice", span, Page(0, 100))
        first = fetch_memories(reader, "alice", span, Page(0, 100), year_first=True, vectors=buffer)
        assert first.column("id").to_pylist() == [*older, *late, *early]
        assert [p.num_rows for p in by_year(first)] == [2, 1, 1]
        by_id = {r["id"]: r["embedding"] for r in first.to_pylist()}
        after = early[0]
        again = fetch_memories(
            reader, "alice", span, Page(after, 100), year_first=True, vectors=buffer
        )

    assert by_id == {r["id"]: r["embedding"] for r in plain.to_pylist()}
    assert again.column("id").to_pylist() == [*older, *late]  # after early's id, by year
    want = {r["id"]: r["embedding"] for r in plain.to_pylist() if r["id"] > after}
    assert {r["id"]: r["embedding"] for r in again.to_pylist()} == want


@pytest.mark.parametrize("damage", ["none", "one byte", "torn", "longer"])
def test_a_file_is_verified_against_the_bytes_just_written(
    store: Store, tmp_path: Path, damage: str
) -> None:
    cold = local_cold(tmp_path)
    seed(store)
    scratch = Scratch()
    entry = write_part(store.engine, cold, _first_part(store), scratch)
    path = cold.local_path(entry.uri)
    data = bytearray(cold.fs.cat_file(path))
    if damage == "one byte":
        data[len(data) // 2] ^= 0x01
    elif damage == "torn":
        data = data[:-100]
    elif damage == "longer":
        data += b"\0"
    cold.fs.pipe_file(path, bytes(data))

    assert scratch.last is not None
    assert verify_part(store.engine, cold, entry, scratch) == (damage == "none")
    assert verify_part(store.engine, cold, entry) == (damage == "none")  # by its sha256


def test_vectors_read_the_same_as_stored_bytes_and_through_vector_send(store: Store) -> None:
    texts = [f"note {i} with its own vector" for i in range(5)]
    ids = put(store, "alice", texts, AS_OF - timedelta(days=400))
    want = HashingEmbedder(store.settings.embedding.dim).embed(texts)
    span = (AS_OF - timedelta(days=5000), CUTOFF)
    with MemoryReader(store.engine) as reader:
        assert reader.stored_bytes  # the embedded server's
        stored = fetch_memories(reader, "alice", span, Page(0, 100))
    with store.engine.begin() as conn:  # as on a server without the cast
        conn.execute(text("DROP CAST (vector AS bytea)"))
    try:
        with MemoryReader(store.engine) as reader:
            assert not reader.stored_bytes
            sent = fetch_memories(reader, "alice", span, Page(0, 100))
    finally:
        with store.engine.begin() as conn:
            conn.execute(text("CREATE CAST (vector AS bytea) WITHOUT FUNCTION"))
            assert conn.execute(text(STORED_BYTES_CAST)).scalar()

    assert stored.column("id").to_pylist() == ids
    assert stored.equals(sent)
    got = stored.column("embedding").to_pylist()
    assert [list(map(float, v)) for v in want] == got


@pytest.mark.parametrize("stored_bytes", [True, False])
def test_vectors_convert_from_any_chunking_into_the_asked_order(*, stored_bytes: bool) -> None:
    want = np.random.default_rng(3).standard_normal((7, 5)).astype(np.float32)
    endian = "<" if stored_bytes else ">"  # stored bytes, or vector_send's big-endian
    head = np.array([5, 0], dtype=f"{endian}i2").tobytes()  # int16 dimensions, int16 unused
    values = [head + row.astype(f"{endian}f4").tobytes() for row in want]
    # A chunk that starts at an offset into its buffers, an empty one, then the rest.
    sliced = pa.array([b"not a vector", *values[:3]], pa.binary()).slice(1)
    column = pa.chunked_array([sliced, pa.array([], pa.binary()), pa.array(values[3:])])
    order = np.array([6, 0, 5, 1, 4, 2, 3])

    got = vector_column(column, VectorBuffer(), stored_bytes=stored_bytes, order=order)
    in_place = vector_column(column, VectorBuffer(), stored_bytes=stored_bytes, order=None)

    assert np.array_equal(np.array(got.to_pylist(), dtype=np.float32), want[order])
    assert np.array_equal(np.array(in_place.to_pylist(), dtype=np.float32), want)
    mixed = pa.chunked_array([pa.array(values[:2]), pa.array([head + bytes(8)])])
    with pytest.raises(ValueError, match="different dimensions"):
        vector_column(mixed, VectorBuffer(), stored_bytes=stored_bytes, order=None)


def test_two_workers_archive_every_namespace_of_many_once(store: Store, tmp_path: Path) -> None:
    cold = local_cold(tmp_path)
    old = AS_OF - timedelta(days=400)
    ids = {
        f"ns{n}": put(store, f"ns{n}", [f"fact {i} of ns{n}" for i in range(n + 1)], old)
        for n in range(7)
    }

    out = run(store, cold, batch=3)  # several batches in the larger namespaces

    assert out.rows_archived == out.candidates == sum(len(v) for v in ids.values()) == 28
    assert column(store, "SELECT id FROM memories") == []
    consistent(store, cold, 28)
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT namespace, count(*) FROM archived_memories GROUP BY 1"))
        by_namespace = {name: count for name, count in rows}
    assert by_namespace == {name: len(v) for name, v in ids.items()}


def test_importing_archival_leaves_adbc_and_pandas_until_a_bulk_read() -> None:
    # ADBC's DB-API imports pyarrow.dataset, and that pandas: 0.3 s of CPU (2.1 -> 1.8 s)
    # for each process that imports archival (the CLI's privacy commands, `archivist
    # serve`, the tests' workers) and may never read memories in bulk.
    heavy = {"adbc_driver_manager", "pyarrow.dataset", "pandas"}
    assert heavy & modules_after_import("tasks.aging") == set()
