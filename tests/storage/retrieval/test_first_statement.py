"""A search's first statement: planned under the server's scan settings even after another
search in the same transaction (priming runs two), and read by the document chunks' part
too, which then sends no first statement of its own."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import event, text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever, SearchOptions
from storage.retrieval.candidates import settled_rows
from storage.server.engine import Store
from tasks.ann_index import refresh_ann_index
from tests.storage.memory_factory import put
from tests.tasks.documents.test_ingest import AT, ingest

NOW = AT + timedelta(days=1)
SCANS = text(
    "SELECT current_setting('enable_indexscan') AS indexscan, "
    "current_setting('enable_bitmapscan') AS bitmap, current_setting('enable_seqscan') AS seq"
)


def retriever(store: Store) -> Retriever:
    return Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())


def test_a_first_statement_after_a_search_runs_under_the_server_scan_settings(
    store: Store,
) -> None:
    put(store, "acme", [f"note {i} about the boiler" for i in range(30)], AT)
    r = retriever(store)
    with store.engine.begin() as conn:
        r.search_in(conn, "acme", "boiler", r.query_vector("acme", "boiler"), 5, None, NOW)
        left = conn.execute(SCANS).one()
        settled = settled_rows(conn, SCANS, {}, prepare=False)[0]
    assert left.indexscan == "off"  # what a search leaves for the rest of its transaction
    assert (settled.indexscan, settled.bitmap, settled.seq) == ("on", "on", "on")


def test_the_chunks_part_reads_the_first_statement_of_the_search(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(120):
        (folder / f"n{i:03}.md").write_text(f"# Note {i}\n\nThe boiler pressure note {i}.\n")
    ingest(store, str(folder))
    put(store, "acme", ["a small memory about the boiler"], AT)
    assert refresh_ann_index(store.engine, min_rows=100) == {"acme": 120}
    sent: list[str] = []

    def record(_conn, _cursor, statement: str, *_args) -> None:
        sent.append(" ".join(statement.split()))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        mixed = retriever(store).search("acme", "boiler pressure", as_of=NOW)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    alone = retriever(store).search(
        "acme", "boiler pressure", as_of=NOW, options=SearchOptions(kinds=["doc"])
    )

    firsts = [s for s in sent if s.startswith("SELECT tsvector_to_array")]
    walks = [s for s in sent if "FROM document_chunks WHERE" in s and "ORDER BY embedding" in s]
    assert len(firsts) == 1  # the memories' only: the chunks' part reads its row
    assert len(walks) == 1  # its chunks are indexed: the first statement said so
    docs = [h.ref for h in mixed if h.doc is not None]
    assert docs and docs == [h.ref for h in alone][: len(docs)]
