"""Two writers delivering to one memory file at once: neither overwrites the other's lines."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from fsspec.implementations.local import LocalFileSystem
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage import blocks
from storage.server.engine import Store
from tasks.files import FlushOutcome, MemoryRoot, flush_blocks, timeline_block


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


def queue_line(store: Store, number: int) -> None:
    event = {"event": "tidy", "namespace": "acme", "as_of": f"2026-11-2{number}T00:00:00+00:00"}
    with Session(store.engine) as session, session.begin():
        blocks.add_blocks(session, [timeline_block("acme", f"tidy:acme@{number}", event)])


def waiting_for_a_file_lock(store: Store) -> bool:
    with store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        return bool(conn.execute(text(query)).scalar_one())


def test_a_second_writer_waits_for_the_first_and_keeps_its_lines(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme/timeline.jsonl").write_text("")
    slow = PausesAfterReading()
    queue_line(store, 1)
    results: dict[str, FlushOutcome] = {}
    first = threading.Thread(
        target=lambda: results.update(a=flush_blocks(store.engine, MemoryRoot(slow, str(tmp_path))))
    )
    first.start()
    assert slow.read_done.wait(timeout=60)  # it holds line 1 and the file as it was
    queue_line(store, 2)
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

    lines = (tmp_path / "acme/timeline.jsonl").read_text().splitlines()
    assert [json.loads(line)["block"] for line in lines] == ["tidy:acme@1", "tidy:acme@2"]
    assert results["a"].blocks_appended == results["b"].blocks_appended == 1
