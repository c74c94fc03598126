"""Ingest of documents: every format from local files and from S3, unchanged files write
nothing, a changed file replaces only its chunks, bad files are skipped with a reason."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.errors import InputError
from storage.server.engine import Store
from tasks.documents import Chunking, IngestRequest, ingest_documents
from tests.tasks.documents.samples import HTML, MARKDOWN, TEXT, pdf

AT = datetime(2026, 11, 20, 12, tzinfo=UTC)
CHUNKING = Chunking(1200, 150)


def write_samples(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "garden.md").write_text(MARKDOWN)
    (folder / "boiler.txt").write_text(TEXT)
    (folder / "bike.html").write_text(HTML)
    (folder / "passport.pdf").write_bytes(pdf())


def ingest(store: Store, *urls: str, at: datetime = AT, ns: str = "acme", **kw):
    embedder = HashingEmbedder(store.settings.embedding.dim)
    kw.setdefault("max_bytes", 50 * 1024 * 1024)
    kw["options"] = kw.get("options") or {}
    chunking = kw.pop("chunking", CHUNKING)
    request = IngestRequest(ns, list(urls), chunking, at=at, **kw)
    return ingest_documents(store.engine, embedder, request)


def chunks_of(store: Store, ns: str = "acme") -> list:
    with Session(store.engine) as s:
        return list(
            s.execute(
                text(
                    "SELECT c.id, d.uri, d.title, d.format, c.heading, c.text, c.char_start, "
                    "c.char_end, d.text AS doc_text, c.xmin::text AS xmin, d.xmin::text AS dx "
                    "FROM document_chunks c JOIN documents d ON d.id = c.document_id "
                    "WHERE c.namespace = :ns ORDER BY d.uri, c.ordinal"
                ),
                {"ns": ns},
            )
        )


def test_every_format_from_a_local_folder(store: Store, tmp_path: Path):
    write_samples(tmp_path / "docs")
    report = ingest(store, str(tmp_path / "docs"), tag="home")
    assert (report.files, report.added, report.skipped) == (4, 4, {})
    rows = chunks_of(store)
    by_format = {r.format: r for r in rows}
    assert set(by_format) == {"markdown", "text", "html", "pdf"}
    assert by_format["html"].title == "Bicycle care"
    assert "secret" not in " ".join(r.text for r in rows)  # scripts are not text
    assert any("4 bar" in r.text and r.heading == "Bicycle care > Tyres" for r in rows)
    assert any("Aphids" in r.text and r.heading == "Garden guide > Pests" for r in rows)
    assert any("six months" in r.text for r in rows if r.format == "pdf")
    for r in rows:  # provenance: each chunk is its exact span of the stored text
        assert r.doc_text[r.char_start : r.char_end] == r.text
        assert r.uri.startswith(str(tmp_path))


def test_every_format_from_s3(store: Store, s3_bucket: str, s3_options: dict):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    fs.pipe(
        {
            f"{s3_bucket}/kb/garden.md": MARKDOWN.encode(),
            f"{s3_bucket}/kb/boiler.txt": TEXT.encode(),
            f"{s3_bucket}/kb/sub/bike.html": HTML.encode(),
            f"{s3_bucket}/kb/passport.pdf": pdf(),
        }
    )
    report = ingest(store, f"s3://{s3_bucket}/kb", options=s3_options)
    assert (report.added, report.skipped) == (4, {})
    rows = chunks_of(store)
    assert {r.format for r in rows} == {"markdown", "text", "html", "pdf"}
    assert f"s3://{s3_bucket}/kb/sub/bike.html" in {r.uri for r in rows}


def test_unchanged_files_write_nothing_and_a_changed_file_replaces_only_its_chunks(
    store: Store, tmp_path: Path
):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    before = chunks_of(store)
    again = ingest(store, str(tmp_path), at=AT + timedelta(days=1))
    assert (again.unchanged, again.added, again.updated, again.chunks) == (4, 0, 0, 0)
    assert chunks_of(store) == before  # same ids, same row versions (xmin), same times

    (tmp_path / "garden.md").write_text(MARKDOWN + "\n## Harvest\n\nPick courgettes small.\n")
    changed = ingest(store, str(tmp_path), at=AT + timedelta(days=2))
    assert (changed.updated, changed.unchanged) == (1, 3)
    after = chunks_of(store)
    garden = str(tmp_path / "garden.md")
    assert [r for r in after if r.uri != garden] == [r for r in before if r.uri != garden]
    assert {r.id for r in after if r.uri == garden}.isdisjoint(r.id for r in before)
    assert any("courgettes" in r.text for r in after)


def test_a_new_tag_changes_only_the_tag(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    ingest(store, str(tmp_path))
    before = chunks_of(store)
    report = ingest(store, str(tmp_path / "garden.md"), tag="garden")
    assert (report.retagged, report.chunks) == (1, 0)
    assert [r.xmin for r in chunks_of(store)] == [r.xmin for r in before]
    with Session(store.engine) as s:
        tags = {r.uri: r.tag for r in s.execute(text("SELECT uri, tag FROM documents"))}
    assert tags[str(tmp_path / "garden.md")] == "garden"


def test_other_chunking_rechunks_an_unchanged_file(store: Store, tmp_path: Path):
    (tmp_path / "long.md").write_text("# Long\n\n" + " ".join(f"w{i}" for i in range(600)))
    first = ingest(store, str(tmp_path))
    second = ingest(store, str(tmp_path), chunking=Chunking(300, 50))
    assert second.updated == 1 and second.chunks > first.chunks
    rows = chunks_of(store)
    assert all(len(r.text) <= 300 for r in rows)
    # neighbouring pieces of the long paragraph share up to the overlap
    assert all(a.char_end > b.char_start for a, b in zip(rows, rows[1:], strict=False))


def test_bad_files_are_skipped_and_counted_while_good_ones_go_in(store: Store, tmp_path: Path):
    write_samples(tmp_path)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage")
    (tmp_path / "junk.txt").write_bytes(os.urandom(4096))
    (tmp_path / "nul.md").write_bytes(b"# Title\n\x00\x00\x01\x02binary")
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "blank.txt").write_text("  \n\n \t\n")
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as f:  # sparse: 200 MB on paper, nothing on disk
        f.truncate(200 * 1024 * 1024)
    report = ingest(store, str(tmp_path), str(tmp_path / "missing"), str(tmp_path / "x.docx"))
    assert report.added == 4
    assert report.skipped == {
        "unreadable_pdf": 1,
        "binary": 2,
        "empty": 2,
        "too_large": 1,
        "not_found": 2,
    }
    reasons = {Path(uri).name: reason for uri, reason, _ in report.problems}
    assert reasons["huge.txt"] == "too_large" and reasons["broken.pdf"] == "unreadable_pdf"
    assert len(chunks_of(store)) >= 4


def test_a_link_out_of_the_folder_is_skipped_and_one_within_it_read(store: Store, tmp_path):
    write_samples(tmp_path / "kb")
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the alarm code is 4711")
    (tmp_path / "kb" / "secret.txt").symlink_to(secret)
    (tmp_path / "kb" / "away").symlink_to(secret.parent, target_is_directory=True)
    (tmp_path / "kb" / "same.txt").symlink_to(tmp_path / "kb" / "boiler.txt")
    report = ingest(store, str(tmp_path / "kb"))
    assert report.added == 5  # the samples, and same.txt
    assert report.skipped == {"outside_folder": 1}
    assert [uri for uri, _, _ in report.problems] == [str(tmp_path / "kb" / "secret.txt")]
    assert not any("4711" in row.text for row in chunks_of(store))  # nor through away/
    # named on the command line, the file is read: that is no folder's ingest
    assert ingest(store, str(tmp_path / "kb" / "secret.txt")).added == 1


def test_an_explicit_file_of_an_unknown_format_is_skipped(store: Store, tmp_path: Path):
    (tmp_path / "notes.docx").write_bytes(b"PK\x03\x04")
    report = ingest(store, str(tmp_path / "notes.docx"))
    assert report.skipped == {"unsupported_format": 1}


def test_bad_names_and_chunking_are_refused_before_reading(store: Store, tmp_path: Path):
    with pytest.raises(InputError, match="bad namespace"):
        ingest(store, str(tmp_path), ns="a b")
    with pytest.raises(InputError, match="overlap"):
        ingest(store, str(tmp_path), chunking=Chunking(200, 150))
    with pytest.raises(InputError, match="bad tag"):
        ingest(store, str(tmp_path), tag="x" * 101)


def test_text_postgresql_cannot_hold_is_cleaned_not_fatal(store: Store, tmp_path: Path):
    (tmp_path / "nul.pdf").write_bytes(pdf(("Nul a\x00b here", "next line")))
    (tmp_path / "page.html").write_text("https://example.invalid/just-a-url")
    report = ingest(store, str(tmp_path))
    assert (report.added, report.skipped) == (2, {})
    assert "\x00" not in " ".join(r.text for r in chunks_of(store))


class WaitingEmbedder(HashingEmbedder):
    """Embeds once ``go`` is set: holds an ingest between its look at the store and its
    write."""

    def __init__(self, dim: int, go: threading.Event) -> None:
        super().__init__(dim)
        self.go, self.waiting = go, threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.waiting.set()
        assert self.go.wait(timeout=60)
        return super().embed(texts)


def test_two_ingests_of_the_same_new_file_end_with_one_document(store: Store, tmp_path: Path):
    (tmp_path / "garden.md").write_text(MARKDOWN)
    go, outcome = threading.Event(), dict[str, Any]()
    slow = WaitingEmbedder(store.settings.embedding.dim, go)

    def first() -> None:
        try:
            request = IngestRequest("acme", [str(tmp_path)], CHUNKING, max_bytes=1 << 20, at=AT)
            outcome["report"] = ingest_documents(store.engine, slow, request)
        except Exception as exc:  # the run the unique constraint used to stop
            outcome["error"] = exc

    waiting = threading.Thread(target=first)
    waiting.start()
    assert slow.waiting.wait(timeout=60)  # it found no document and waits to embed
    other = ingest(store, str(tmp_path))  # the same file, in meanwhile
    go.set()
    waiting.join(timeout=120)

    assert "error" not in outcome, outcome.get("error")
    assert other.added == 1 and outcome["report"].added == 1
    with Session(store.engine) as session:
        docs = session.execute(text("SELECT id FROM documents WHERE namespace = 'acme'")).all()
        chunks = session.execute(text("SELECT count(*) FROM document_chunks")).scalar_one()
    assert len(docs) == 1 and chunks == other.chunks  # one document, one set of chunks


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_text_with_a_byte_order_mark_is_read_in_its_encoding(
    store: Store, tmp_path: Path, encoding: str
) -> None:
    text = "# Boiler\n\nThe boiler's service code is 4711; call Jürgen before May.\n"
    marks = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}
    (tmp_path / "boiler.txt").write_bytes(marks.get(encoding, b"") + text.encode(encoding))

    report = ingest(store, str(tmp_path / "boiler.txt"))

    assert (report.added, report.skipped) == (1, {})
    assert "call Jürgen before May" in chunks_of(store)[0].text


def test_bytes_that_are_not_what_their_mark_says_are_skipped_as_binary(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "odd.txt").write_bytes(b"\xff\xfe" + "fine".encode("utf-16-le") + b"\x00\xdc")

    report = ingest(store, str(tmp_path / "odd.txt"))

    assert report.skipped == {"binary": 1}
    assert report.problems[0][2] == "not UTF-16 (its byte order mark) at byte 10"


def test_a_file_deleted_from_an_ingested_folder_is_reported_and_pruned_when_asked(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "kb"
    write_samples(folder)
    (tmp_path / "single.md").write_text("# Single\n\nA file named on its own.\n")
    ingest(store, str(folder), str(tmp_path / "single.md"))
    (folder / "garden.md").unlink()
    (tmp_path / "single.md").unlink()  # not under a folder ingested again: left alone

    kept = ingest(store, str(folder))
    still = {Path(row.uri).name for row in chunks_of(store)}
    pruned = ingest(store, str(folder), prune=True, actor="cli:test")
    left = {Path(row.uri).name for row in chunks_of(store)}

    assert kept.gone == [str(folder / "garden.md")] and kept.pruned == 0
    assert "garden.md" in still  # reported, still searchable
    assert pruned.gone == [str(folder / "garden.md")] and pruned.pruned == 1
    assert left == {"boiler.txt", "bike.html", "passport.pdf", "single.md"}
    with store.engine.connect() as conn:
        audited = conn.execute(
            text("SELECT actor, details FROM audit_log WHERE target = 'gone_files'")
        ).one()
    assert audited.actor == "cli:test" and audited.details["documents"] == 1
    assert ingest(store, str(folder)).gone == []
