"""Two writers delivering to one memory file at once: neither overwrites the other's blocks."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from fsspec.implementations.local import LocalFileSystem
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage import blocks
from storage.server.engine import Store
from tasks.files import FlushOutcome, MemoryRoot, block_marker, flush_blocks


class PausesAfterReading(LocalFileSystem):  # type: ignore[misc]
    """Reads a file, then waits until told to go on: the writer holds what it read."""

    def __init__(self) -> None:
        super().__init__()
        self.read_done = threading.Event()
        self.go_on = threading.Event()

    def cat_file(self, path: str, start: Any = None, end: Any = None, **kwargs: Any) -> bytes:
        data: bytes = super().cat_file(path, start, end, **kwargs)
        if not self.read_done.is_set():
            self.read_done.set()
            assert self.go_on.wait(timeout=60)
        return data


LOG = "acme/memory/2026-11-21.md"


def queue_block(store: Store, number: int) -> None:
    row: dict[str, object] = {
        "namespace": "acme",
        "path": LOG,
        "block_key": f"daily:s{number}@0123456789abcdef",
        "content": f"{block_marker(f'daily:s{number}@0123456789abcdef')}\n## Session {number}",
        "memory_ids": [],
        "run_id": None,
    }
    with Session(store.engine) as session, session.begin():
        blocks.add_blocks(session, [row])


def waiting_for_a_file_lock(store: Store) -> bool:
    with store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        return bool(conn.execute(text(query)).scalar_one())


def test_a_second_writer_waits_for_the_first_and_keeps_its_lines(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "acme/memory").mkdir(parents=True)
    (tmp_path / LOG).write_text("# Memory log · acme · 2026-11-21\n")
    slow = PausesAfterReading()
    queue_block(store, 1)
    results: dict[str, FlushOutcome] = {}
    first = threading.Thread(
        target=lambda: results.update(a=flush_blocks(store.engine, MemoryRoot(slow, str(tmp_path))))
    )
    first.start()
    assert slow.read_done.wait(timeout=60)  # it holds line 1 and the file as it was
    queue_block(store, 2)
    second = threading.Thread(
        target=lambda: results.update(
            b=flush_blocks(store.engine, MemoryRoot(LocalFileSystem(), str(tmp_path)))
        )
    )
    second.start()
    deadline = time.monotonic() + 30
    while second.is_alive() and not waiting_for_a_file_lock(store):
        assert time.monotonic() < deadline, "the second writer neither waited nor finished"
        time.sleep(0.01)

    slow.go_on.set()
    first.join(timeout=60)
    second.join(timeout=60)

    text = (tmp_path / LOG).read_text()
    assert text.index("## Session 1") < text.index("## Session 2")
    assert text.count("## Session") == 2
    assert results["a"].blocks_appended == results["b"].blocks_appended == 1
