"""Document chunks in search: alone (``kinds=["doc"]``) or mixed with memories on one
composite scale, each doc hit with its provenance, one namespace only, feedback that moves
the ranking, and no access recorded against memories that happen to share a chunk's id."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.errors import RetrievalError
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import DOC_KIND, DocSource, Retriever, SearchOptions
from storage.server.engine import Store
from storage.server.scoped import open_serving_engine
from tasks.documents import feedback
from tests.helpers import scoped
from tests.storage.memory_factory import put
from tests.tasks.documents.test_ingest import AT, ingest, write_samples

NOW = AT + timedelta(days=1)


def retriever(store: Store, engine=None) -> Retriever:
    return Retriever(engine or store.engine, HashingEmbedder(384), RetrievalSettings())


def test_doc_hits_alone_carry_their_provenance(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path), tag="home")
    put(store, "acme", ["the bicycle chain squeaked on the ride to work"], AT)
    hits = retriever(store).search(
        "acme", "oil the bicycle chain", as_of=NOW, options=SearchOptions(kinds=["doc"])
    )
    assert hits and all(h.kind == DOC_KIND for h in hits)
    top = hits[0]
    assert "Oil the chain" in top.content
    assert isinstance(top.doc, DocSource)
    assert (top.doc.title, top.doc.tag, top.doc.heading) == ("Bicycle care", "home", "Bicycle care")
    assert top.doc.uri == str(tmp_path / "bike.html") and top.ref == ("doc", top.doc.chunk_id)
    # A chunk is no memory: a memory call given its id would act on another row.
    assert top.memory_id is None
    with store.engine.connect() as conn:
        stored = conn.execute(
            text("SELECT text FROM documents WHERE id = :id"), {"id": top.doc.document_id}
        ).scalar_one()
    assert stored[top.doc.char_start : top.doc.char_end] == top.content
    assert top.tier == "document" and top.occurred_at == AT and top.session_id is None


def test_default_search_mixes_chunks_and_memories_on_one_scale(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    put(store, "acme", ["aphids came back on the tomatoes in the garden"], AT)
    put(store, "acme", ["dentist appointment on Friday at nine"], AT)
    r = retriever(store)
    hits = r.search("acme", "aphids on the tomatoes", as_of=NOW)
    kinds = {h.kind for h in hits}
    assert {"doc", "fact"} <= kinds
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for h in hits:  # the same factors, the same weights: one composite scale
        assert {"semantic", "recency", "importance"} <= set(h.factors)
        assert h.weights == hits[0].weights
        assert (h.doc is not None) == (h.kind == DOC_KIND)
    memory_only = r.search(
        "acme", "aphids on the tomatoes", as_of=NOW, options=SearchOptions(kinds=["fact"])
    )
    assert {h.kind for h in memory_only} == {"fact"}
    mixed = r.search(
        "acme", "aphids on the tomatoes", as_of=NOW, options=SearchOptions(kinds=["fact", "doc"])
    )
    assert [h.ref for h in mixed] == [h.ref for h in hits]
    assert r.search("acme", "dentist Friday", as_of=NOW)[0].kind == "fact"


def test_a_namespace_with_documents_only_is_searched(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    hits = retriever(store).search("acme", "passport renewal", as_of=NOW)
    assert hits and hits[0].doc is not None and hits[0].doc.uri.endswith("passport.pdf")


def test_feedback_moves_a_chunk_in_the_ranking(store: Store, tmp_path: Path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.md").write_text("The VPN token lives in the blue drawer.\n")
    ingest(store, str(tmp_path))
    r = retriever(store)
    first, second = r.search(
        "acme", "where is the VPN token?", as_of=NOW, options=SearchOptions(kinds=["doc"])
    )
    assert first.score == pytest.approx(second.score)
    assert first.doc is not None and second.doc is not None
    feedback(store.engine, second.doc.chunk_id, 1, 0.1)
    top = r.search(
        "acme", "where is the VPN token?", as_of=NOW, options=SearchOptions(kinds=["doc"])
    )[0]
    assert top.ref == second.ref and top.factors["importance"] == pytest.approx(0.6)
    for _ in range(2):
        feedback(store.engine, second.doc.chunk_id, -1, 0.1)
    top = r.search(
        "acme", "where is the VPN token?", as_of=NOW, options=SearchOptions(kinds=["doc"])
    )[0]
    assert top.ref == first.ref


def test_doc_hits_record_no_access(store: Store, tmp_path: Path):
    ids = put(store, "acme", [f"unrelated note {i}" for i in range(30)], AT)
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    hits = retriever(store).search(
        "acme", "oil the bicycle chain", as_of=NOW, options=SearchOptions(kinds=["doc"])
    )
    assert hits and {h.ref[1] for h in hits} & set(ids)  # ids overlap, nothing else does
    with store.engine.connect() as conn:
        logged = conn.execute(text("SELECT count(*) FROM memory_access_log")).scalar()
    assert logged == 0


def test_look_alike_namespaces_never_see_each_others_documents(
    store: Store, tmp_path: Path, settings
):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "plan.md").write_text("# Plan\n\nThe acme launch code is zebra.\n")
    (tmp_path / "b" / "plan.md").write_text("# Plan\n\nThe acme2 launch code is walrus.\n")
    ingest(store, str(tmp_path / "a"), ns="acme")
    ingest(store, str(tmp_path / "b"), ns="acme2")
    serving = open_serving_engine(settings)
    for engine in (store.engine, serving):
        r = retriever(store, engine)
        for ns, mine, theirs in (("acme", "zebra", "walrus"), ("acme2", "walrus", "zebra")):
            with scoped(serving, store, ns) if engine is serving else engine.begin() as conn:
                hits = r.search(
                    ns, "launch code zebra walrus", as_of=NOW, record_access=False, conn=conn
                )
            assert hits and all(h.namespace == ns for h in hits)
            assert any(mine in h.content for h in hits)
            assert not any(theirs in h.content for h in hits)
        assert r.search("acme3", "launch code", as_of=NOW) == []


def test_under_the_serving_role_a_query_without_namespace_sees_one(
    store: Store, tmp_path, settings
):
    write_samples(tmp_path)
    ingest(store, str(tmp_path), ns="acme")
    ingest(store, str(tmp_path), ns="acme2")
    with scoped(open_serving_engine(settings), store, "acme2") as conn:
        seen = conn.execute(
            text(
                "SELECT DISTINCT d.namespace FROM documents d "
                "UNION SELECT DISTINCT namespace FROM document_chunks"
            )
        ).scalars()
        assert set(seen) == {"acme2"}


def test_an_unknown_kind_is_still_refused(store: Store):
    with pytest.raises(RetrievalError, match="unknown kind"):
        retriever(store).search("acme", "x", options=SearchOptions(kinds=["docs"]))


def test_archived_search_keeps_the_chunks(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    put(store, "acme", ["the bicycle chain snapped on Tuesday"], AT)
    r = retriever(store)
    hot = r.search("acme", "bicycle chain", as_of=NOW, record_access=False)
    cold = r.search(
        "acme", "bicycle chain", as_of=NOW, options=SearchOptions(include_archived=True)
    )
    assert [h.ref for h in cold] == [h.ref for h in hot]
    assert any(h.doc is not None for h in cold)


def test_the_hnsw_index_finds_what_the_exact_scan_finds(store: Store, tmp_path: Path):
    from tasks.ann_index import refresh_ann_index

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(120):
        topic = ["boiler pressure", "garden hose", "passport office", "bicycle chain"][i % 4]
        body = f"# Note {i}\n\nThe {topic} note number {i} says item {i % 7} matters.\n"
        (folder / f"n{i:03}.md").write_text(body)
    ingest(store, str(folder))
    put(store, "acme", ["a small memory about the boiler"], AT)
    r = retriever(store)
    query = "boiler pressure item 3"
    exact = r.search(
        "acme",
        query,
        limit=20,
        as_of=NOW,
        record_access=False,
        options=SearchOptions(kinds=["doc"]),
    )
    flagged = refresh_ann_index(store.engine, min_rows=100)
    assert flagged == {"acme": 120}
    with store.engine.connect() as conn:
        indexed = conn.execute(
            text("SELECT count(*) FROM document_chunks WHERE ann_indexed")
        ).scalar_one()
    assert indexed == 120
    r = retriever(store)
    walked = r.search(
        "acme",
        query,
        limit=20,
        as_of=NOW,
        record_access=False,
        options=SearchOptions(kinds=["doc"]),
    )
    assert [h.ref for h in walked[:10]] == [h.ref for h in exact[:10]]
    mixed = r.search("acme", query, as_of=NOW, record_access=False)
    assert any(h.doc is not None for h in mixed)
    ingest(store, str(folder / "n000.md"), ns="acme", tag="x")  # flags survive a retag
    assert refresh_ann_index(store.engine, min_rows=100) == {"acme": 0}
