"""``archivist docs`` as a user runs it: ingest, list, search, feedback, rebuild, purge, and
one-line errors for bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.cli import main
from storage.kernel.settings import Settings
from tests.tasks.documents.samples import pdf
from tests.tasks.documents.test_ingest import write_samples


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_document_round_trip(env: Settings, tmp_path: Path) -> None:
    write_samples(tmp_path / "kb")
    (tmp_path / "kb" / "broken.pdf").write_bytes(pdf()[:60])
    code, out = run("docs", "ingest", "acme", str(tmp_path / "kb"), "--tag", "home")
    assert code == 0, out
    assert f"skipped {tmp_path / 'kb' / 'broken.pdf'}: unreadable_pdf" in out
    assert "5 files: 4 added, 0 updated, 0 unchanged, 0 retagged;" in out
    assert "skipped: 1 unreadable_pdf" in out
    code, out = run("docs", "ingest", "acme", str(tmp_path / "kb"), "--tag", "home")
    assert "0 added, 0 updated, 4 unchanged" in out and "0 chunks written" in out

    code, out = run("docs", "list", "acme", "--json")
    listed = json.loads(out)["documents"]
    assert code == 0 and {d["title"] for d in listed} >= {"Bicycle care", "Garden guide"}
    bike = next(d for d in listed if d["title"] == "Bicycle care")
    code, out = run("docs", "list", "acme")
    assert "Bicycle care" in out and "home" in out

    code, out = run("search", "acme", "oil the bicycle chain", "--kind", "doc", "--json")
    hit = json.loads(out)["hits"][0]
    assert code == 0 and hit["kind"] == "doc" and hit["memory_id"] is None
    assert hit["doc"]["document_id"] == bike["id"] and hit["doc"]["tag"] == "home"
    chunk = hit["doc"]["chunk_id"]
    assert hit["label"] == "[Doc 1]" and json.loads(out)["sources"].startswith(
        f'Sources: [Doc 1] doc {bike["id"]} "Bicycle care"'
    )
    code, out = run("search", "acme", "oil the bicycle chain", "--explain")
    assert f'[Doc 1] doc {bike["id"]} "Bicycle care"' in out
    assert f"(chunk {chunk}, tag home)" in out

    code, out = run("docs", "feedback", str(chunk), "+1")
    assert code == 0 and f"chunk {chunk}: importance 0.60 (+1 / -0)" in out, out
    code, out = run("docs", "feedback", str(chunk), "-1")
    assert code == 0 and "importance 0.50 (+1 / -1)" in out, out

    code, out = run("docs", "rebuild", "acme", "--chunk-size", "300", "--overlap", "20")
    assert code == 0 and "rebuilt 4 documents into" in out, out

    code, out = run("docs", "purge", "acme", str(bike["id"]))
    assert code == 0 and f"purged 1 documents ({bike['id']})" in out
    code, out = run("docs", "purge", "acme", "--tag", "home")
    assert code == 0 and "purged 3 documents" in out
    code, out = run("docs", "list", "acme")
    assert "no documents in acme" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["docs", "ingest", "a b", "x"], "Error: bad namespace 'a b'"),
        (["docs", "ingest", "acme", "x", "--overlap", "900"], "Error: overlap 900"),
        (["docs", "ingest", "acme", "x", "--chunk-size", "5"], "Error: chunk size 5"),
        (["docs", "purge", "acme"], "Error: purge takes a document id or --tag"),
        (["docs", "purge", "acme", "42"], "Error: no document 42 in namespace 'acme'"),
        (["docs", "feedback", "42", "+1"], "Error: no document chunk 42"),
        (["docs", "feedback", "42", "+2"], "'+2' is not one of '+1', '-1'"),
    ],
)
def test_bad_input_is_one_line(env: Settings, args: list[str], message: str) -> None:
    code, out = run(*args)
    assert code != 0 and message in out, out
    assert "Traceback" not in out


def test_hostile_file_names_and_texts_are_stored_or_skipped_and_listed_escaped(
    env: Settings, tmp_path: Path
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "two\nlines.md").write_text("# Notes\n\nThe key is under the mat.\n")
    (kb / "bell\x07.txt").write_text("Plain text" + "." * 70_000 + "\x00 after a NUL\n")
    (kb / "x.md").write_text("# Title\nwith a second line\n\nAnd a body.\n")
    os.makedirs(kb / "sub")
    (kb / "sub").joinpath(os.fsdecode(b"latin-\xe9.md")).write_text("# Latin-1 name\n\nText.\n")

    code, out = run("docs", "ingest", "acme", str(kb))
    assert code == 0 and "Traceback" not in out, out
    assert "4 files: 3 added" in out and "skipped: 1 refused" in out, out
    assert "latin-\\udce9.md: refused (its name holds a lone surrogate" in out, out

    code, out = run("docs", "list", "acme")
    assert code == 0 and "two\\nlines.md" in out and "bell\\x07.txt" in out, out
    assert "\x07" not in out and "\x1b" not in out
    assert len(out.splitlines()) == 4  # a header and one line per document
    titles = {d["title"] for d in json.loads(run("docs", "list", "acme", "--json")[1])["documents"]}
    assert titles == {"Notes", "Title", "bell"}  # a too long first line: the name, one line


def test_ingest_says_which_files_are_gone_and_prune_drops_them(env: Settings, tmp_path: Path):
    folder = tmp_path / "kb"
    write_samples(folder)
    run("docs", "ingest", "acme", str(folder))
    (folder / "bike.html").unlink()

    code, offered = run("docs", "ingest", "acme", str(folder))
    searched = run("search", "acme", "oil the bicycle chain", "--kind", "doc", "--no-record")[1]
    code_pruned, pruned = run("docs", "ingest", "acme", str(folder), "--prune")
    after = run("search", "acme", "oil the bicycle chain", "--kind", "doc", "--no-record")[1]

    assert code == 0 and code_pruned == 0
    assert f"  file gone: {folder / 'bike.html'}" in offered
    assert "1 documents whose files are gone are still searchable; run the same ingest with " in (
        offered
    )
    assert "Oil the chain" in searched
    assert f"  dropped: {folder / 'bike.html'}" in pruned
    assert "dropped 1 documents whose files are gone, with their chunks" in pruned
    assert "Oil the chain" not in after
