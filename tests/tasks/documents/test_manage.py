"""Documents after ingest: purge by id and by tag, rebuild, feedback, and forget."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.errors import InputError
from storage.server.engine import Store
from tasks.documents import Chunking, feedback, list_documents, purge_documents, rebuild
from tasks.files import open_memory_root
from tasks.privacy import Export, forget
from tests.tasks.aging.helpers import local_cold
from tests.tasks.documents.test_ingest import AT, chunks_of, ingest, write_samples


def doc_ids(store: Store, ns: str = "acme") -> dict[str, int]:
    return {Path(r["uri"]).name: r["id"] for r in list_documents(store.engine, ns)}


def test_purge_by_id_and_by_tag_leaves_the_rest(store: Store, tmp_path: Path):
    write_samples(tmp_path / "home")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "vpn.md").write_text("# VPN\n\nConnect with the token app.\n")
    (tmp_path / "work" / "desk.md").write_text("# Desk\n\nBook a desk a day ahead.\n")
    ingest(store, str(tmp_path / "home"))
    ingest(store, str(tmp_path / "work"), tag="work")
    ids = doc_ids(store)
    garden_chunks = [r.id for r in chunks_of(store) if r.uri.endswith("garden.md")]

    gone, chunks = purge_documents(store.engine, "acme", document_id=ids["garden.md"], actor="t")
    assert (gone, chunks) == ([ids["garden.md"]], len(garden_chunks))
    gone, _ = purge_documents(store.engine, "acme", tag="work", actor="t")
    assert sorted(gone) == sorted([ids["vpn.md"], ids["desk.md"]])
    assert set(doc_ids(store)) == {"boiler.txt", "bike.html", "passport.pdf"}
    assert not {r.id for r in chunks_of(store)} & set(garden_chunks)
    with Session(store.engine) as s:
        audits = s.execute(text("SELECT action, details FROM audit_log ORDER BY id")).all()
    assert [a.action for a in audits] == ["purge_documents", "purge_documents"]
    assert audits[1].details["documents"] == 2 and "VPN" not in str(audits[1].details)
    with pytest.raises(InputError, match="no document 999"):
        purge_documents(store.engine, "acme", document_id=999, actor="t")
    with pytest.raises(InputError, match="not both"):
        purge_documents(store.engine, "acme", actor="t")


def test_purge_never_reaches_a_look_alike_namespace(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path), tag="kb")
    ingest(store, str(tmp_path), tag="kb", ns="acme2")
    other = doc_ids(store, "acme2")
    with pytest.raises(InputError):  # acme2's id is not acme's
        purge_documents(store.engine, "acme", document_id=other["garden.md"], actor="t")
    purge_documents(store.engine, "acme", tag="kb", actor="t")
    assert doc_ids(store, "acme") == {} and doc_ids(store, "acme2") == other


def test_rebuild_rechunks_from_the_stored_text_even_when_the_source_is_gone(
    store: Store, tmp_path: Path
):
    (tmp_path / "long.md").write_text("# Long\n\n" + " ".join(f"w{i}" for i in range(600)))
    ingest(store, str(tmp_path))
    before = chunks_of(store)
    (tmp_path / "long.md").unlink()
    embedder = HashingEmbedder(store.settings.embedding.dim)
    out = rebuild(store.engine, embedder, "acme", AT + timedelta(days=1), Chunking(400, 40))
    after = chunks_of(store)
    assert out.documents == 1 and out.chunks == len(after) > len(before)
    assert all(
        len(r.text) <= 400 and r.doc_text[r.char_start : r.char_end] == r.text for r in after
    )
    same = rebuild(store.engine, embedder, "acme", AT + timedelta(days=2))  # its own chunking
    assert same.chunks == len(after)


def test_feedback_moves_importance_within_bounds_and_survives_a_rebuild(
    store: Store, tmp_path: Path
):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    chunk_id = chunks_of(store)[0].id
    assert feedback(store.engine, chunk_id, 1, 0.1)["importance"] == pytest.approx(0.6)
    for _ in range(10):
        state = feedback(store.engine, chunk_id, 1, 0.1)
    assert state["importance"] == 1.0 and state["feedback_up"] == 11
    assert feedback(store.engine, chunk_id, -1, 0.1)["importance"] == pytest.approx(0.9)
    embedder = HashingEmbedder(store.settings.embedding.dim)
    rebuild(store.engine, embedder, "acme", AT)
    with Session(store.engine) as s:
        kept = s.execute(text("SELECT max(importance), max(feedback_down) FROM document_chunks"))
    assert tuple(kept.one()) == (pytest.approx(0.9), 1)  # same text: its votes carried over
    with pytest.raises(InputError, match="no document chunk"):
        feedback(store.engine, 10**9, 1, 0.1)
    with pytest.raises(InputError, match=r"\+1 or -1"):
        feedback(store.engine, chunk_id, 2, 0.1)


def test_forget_leaves_no_document_or_chunk_row(store: Store, tmp_path: Path):
    write_samples(tmp_path / "kb")
    ingest(store, str(tmp_path / "kb"))
    ingest(store, str(tmp_path / "kb"), ns="acme2")
    cold = local_cold(tmp_path)
    root = open_memory_root(store.settings)
    bundle = tmp_path / "export"
    out = forget(store.engine, cold, root, "acme", actor="test", export=Export(str(bundle)))
    assert out.rows["documents"] == 4 and out.rows["document_chunks"] >= 4
    assert out.exported is not None and out.exported["documents"] == 4
    exported = [json.loads(line) for line in (bundle / "acme/documents.jsonl").open()]
    garden = next(d for d in exported if d["uri"].endswith("garden.md"))
    assert garden["title"] == "Garden guide" and "Aphids" in garden["text"]
    span = garden["chunks"][-1]
    assert "Aphids" in garden["text"][span["char_start"] : span["char_end"]]
    with Session(store.engine) as s:
        left = s.execute(
            text(
                "SELECT (SELECT count(*) FROM documents WHERE namespace = 'acme'),"
                " (SELECT count(*) FROM document_chunks WHERE namespace = 'acme'),"
                " (SELECT count(*) FROM documents WHERE namespace = 'acme2')"
            )
        ).one()
    assert tuple(left) == (0, 0, 4)
