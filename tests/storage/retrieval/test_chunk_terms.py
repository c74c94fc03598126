"""Document chunks' word counts for BM25 (migration 0031): stored by the index step over a
namespace's indexed chunks, the chunks not indexed yet added by search, and deleted chunks
taken out by whoever deletes them (a purge, a re-ingest, the HTTP API's serving role), in
their namespace only."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings, Settings
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from storage.server.scoped import open_serving_engine
from tasks.ann_index import refresh_ann_index
from tasks.documents import purge_documents
from tests.helpers import scoped
from tests.tasks.documents.test_ingest import AT, ingest

NOW = AT + timedelta(days=1)
TOPICS = ("boiler pressure", "garden hose", "passport office", "bicycle chain")
DOCS = SearchOptions(kinds=["doc"])


def notes(folder: Path, count: int, start: int = 0) -> Path:
    """``count`` one-chunk notes, a quarter of them about each topic; note 0 alone says
    'zanzibar'."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        extra = " zanzibar" if i == 0 else ""
        body = f"# Note {i}\n\nThe {TOPICS[i % 4]} note {i} says item {i % 7} matters{extra}.\n"
        (folder / f"n{i:03}.md").write_text(body)
    return folder


def stored(store: Store, namespace: str) -> dict[str, int]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT lexeme, df FROM namespace_chunk_terms WHERE namespace = :ns"),
            {"ns": namespace},
        )
        return {lexeme: df for lexeme, df in rows}


def live(store: Store, namespace: str, lexeme: str) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM document_chunks "
                    "WHERE namespace = :ns AND tsv @@ CAST(:q AS tsquery)"
                ),
                {"ns": namespace, "q": lexeme},
            ).scalar_one()
        )


def size(store: Store, namespace: str) -> tuple[int, int] | None:
    with store.engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT rows, lex_len FROM namespace_sizes "
                "WHERE namespace = :ns AND source = 'document_chunks'"
            ),
            {"ns": namespace},
        ).one_or_none()
    return None if row is None else (int(row.rows), int(row.lex_len))


def counted_by_search(store: Store, namespace: str, words: list[str]) -> dict[str, int]:
    """The chunk counts a fresh retriever's search reads (its cache, after one search)."""
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())
    retriever.search(namespace, " ".join(words), as_of=NOW, record_access=False, options=DOCS)
    return retriever.doc_stats.df(namespace, words)


def test_the_index_step_stores_chunk_counts_and_search_adds_the_unindexed(
    store: Store, tmp_path: Path
) -> None:
    folder = notes(tmp_path / "a", 120)
    ingest(store, str(folder))
    ingest(store, str(notes(tmp_path / "b", 40)), ns="acme2")  # a small look-alike
    assert refresh_ann_index(store.engine, min_rows=100) == {"acme": 120}
    words = stored(store, "acme")
    assert words["boiler"] == live(store, "acme", "boiler") == 30
    assert "zanzibar" not in words  # in fewer than 20 chunks: counted live
    assert stored(store, "acme2") == {}  # not large: nothing stored
    with store.engine.begin() as conn:  # what search reads is the stored count
        conn.execute(text("UPDATE namespace_chunk_terms SET df = 1000 WHERE lexeme = 'boiler'"))
    ingest(store, str(notes(folder, 8, start=120)))  # two more about the boiler, unindexed

    found = counted_by_search(store, "acme", ["boiler", "zanzibar"])

    assert found == {"boiler": 1002, "zanzibar": 1}
    assert counted_by_search(store, "acme2", ["boiler"]) == {"boiler": 10}


def test_deleting_documents_takes_their_indexed_chunks_out_of_the_counts(
    store: Store, tmp_path: Path
) -> None:
    folder = notes(tmp_path / "a", 120)
    for namespace in ("acme", "acme2"):
        ingest(store, str(folder), ns=namespace)
    refresh_ann_index(store.engine, min_rows=100, term_min_df=1)
    before, other = stored(store, "acme"), stored(store, "acme2")
    rows, lex_len = size(store, "acme") or (0, 0)
    assert before["zanzibar"] == 1 and before["boiler"] == 30
    with store.engine.connect() as conn:
        first, first_len = conn.execute(
            text(
                "SELECT d.id, c.lex_len FROM documents d JOIN document_chunks c "
                "ON c.document_id = d.id WHERE d.namespace = 'acme' AND d.uri LIKE '%n000.md'"
            )
        ).one()

    purge_documents(store.engine, "acme", document_id=first, actor="test")

    after = stored(store, "acme")
    assert "zanzibar" not in after  # no chunk holds it: the word is gone (erasure)
    assert after["boiler"] == 29 == live(store, "acme", "boiler")
    assert size(store, "acme") == (rows - 1, lex_len - first_len)
    assert stored(store, "acme2") == other and other["zanzibar"] == 1  # the look-alike's stay


def test_a_changed_document_and_the_serving_role_keep_the_counts_honest(
    settings: Settings, store: Store, tmp_path: Path
) -> None:
    folder = notes(tmp_path / "a", 120)
    ingest(store, str(folder))
    refresh_ann_index(store.engine, min_rows=100)
    (folder / "n001.md").write_text("# Note 1\n\nNothing about that any more.\n")
    ingest(store, str(folder))  # its indexed chunk replaced by an unindexed one
    assert stored(store, "acme")["hose"] == 29 == live(store, "acme", "hose")
    assert counted_by_search(store, "acme", ["hose"]) == {"hose": 29}
    with store.engine.connect() as conn:
        doc = conn.execute(
            text("SELECT id FROM documents WHERE namespace = 'acme' AND uri LIKE '%n005.md'")
        ).scalar_one()

    # The HTTP API deletes a document as the serving role, which only reads the counts.
    with scoped(open_serving_engine(settings), store, "acme", write=True) as conn:
        assert conn.execute(text("DELETE FROM documents WHERE id = :id"), {"id": doc}).rowcount
        assert conn.execute(text("SELECT count(*) FROM namespace_chunk_terms")).scalar()

    assert stored(store, "acme")["hose"] == 28 == live(store, "acme", "hose")
    left = size(store, "acme")
    assert left is not None and left[0] == 118
