"""Queued documents (``ADD_DOCUMENT``, what the HTTP API and MCP enqueue), drained on the real
store: stored exactly as ``docs ingest`` stores the same bytes, once however often the item
runs or crashes, the last accepted version winning, one namespace never touching another's."""

from __future__ import annotations

import base64
import random
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.queue import table as queue
from storage.server.engine import Store
from tasks.documents import Chunking, IngestRequest, ingest_documents, purge_documents
from tasks.queue import drain_once, execute, run_batch
from tests.fuzz_values import FORGED_TITLE, VALID_IDS, document_text
from tests.tasks.documents.samples import HTML, MARKDOWN, TEXT, pdf
from tests.tasks.queue.test_gone_workers import claimer_pids, wait_until_backends_end

T = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(384)
B64 = "content_base64"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def enqueue(store: Store, namespace: str, *payloads: dict[str, Any]) -> list[int]:
    with Session(store.engine) as session, session.begin():
        return [
            queue.enqueue(session, namespace, "ADD_DOCUMENT", p, now=T, settings=store.settings).id
            for p in payloads
        ]


def drain(store: Store, now: datetime = T) -> Any:
    return drain_once(store.engine, EMBEDDER, store.settings, "w1", now)


def results(store: Store) -> dict[int, Any]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT id, status, result FROM memory_write_queue"))
        return {r.id: (r.status, r.result) for r in rows}


def documents(store: Store, namespace: str) -> list[dict[str, Any]]:
    sql = text(
        "SELECT d.id, d.uri, d.title, d.tag, d.format, d.content_hash, d.text, "
        "array_agg(c.heading || '|' || c.text || '|' || c.content_hash ORDER BY c.ordinal) "
        "AS chunks FROM documents d JOIN document_chunks c ON c.document_id = d.id "
        "WHERE d.namespace = :ns GROUP BY d.id ORDER BY d.uri"
    )
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sql, {"ns": namespace}).mappings()]


UTF16 = "# Boiler\n\nThe service code is 4711; call Jürgen before May.\n"
SAMPLES: dict[str, tuple[dict[str, Any], bytes]] = {
    "garden.md": ({"text": MARKDOWN}, MARKDOWN.encode()),
    "boiler.txt": ({"text": TEXT}, TEXT.encode()),
    "bike.html": ({"text": HTML}, HTML.encode()),
    "passport.pdf": ({B64: b64(pdf())}, pdf()),
    "unicode.txt": ({B64: b64(UTF16.encode("utf-16"))}, UTF16.encode("utf-16")),
}


def test_each_format_is_stored_as_docs_ingest_stores_the_same_file(
    store: Store, tmp_path: Path
) -> None:
    for name, (_, data) in SAMPLES.items():
        (tmp_path / name).write_bytes(data)
    docs = store.settings.documents
    request = IngestRequest(
        "files", [str(tmp_path)], Chunking(docs.chunk_size, docs.overlap), docs.max_file_bytes, T
    )
    ingest_documents(store.engine, EMBEDDER, request)
    enqueue(store, "queued", *({"name": n, **p} for n, (p, _) in SAMPLES.items()))

    report = drain(store)

    assert (report.completed, report.dead, report.retried) == (len(SAMPLES), 0, 0)
    queued, files = documents(store, "queued"), documents(store, "files")
    assert [d["uri"] for d in queued] == sorted(f"upload:{n}" for n in SAMPLES)
    by_name = {Path(d["uri"]).name: d for d in files}
    for doc in queued:
        same = by_name[doc["uri"].removeprefix("upload:")]
        for field in ("title", "format", "content_hash", "text", "chunks"):
            assert doc[field] == same[field], (doc["uri"], field)
    assert "call Jürgen before May" in by_name["unicode.txt"]["text"]
    statuses = {r["status"] for _, r in results(store).values()}
    assert statuses == {"added"}


def test_a_replayed_item_or_a_crash_before_commit_leaves_one_document(store: Store) -> None:
    body = {"name": "garden.md", "text": MARKDOWN, "tag": "home"}
    (first,) = enqueue(store, "acme", body)
    with store.engine.connect() as conn:  # a drainer that wrote the document and died
        with Session(conn) as session, session.begin():
            claimed = queue.claim(session, "doomed", 20, T)
        with Session(conn) as session:
            execute(session, claimed, EMBEDDER, T, store.settings.documents)
            assert documents(store, "acme") == []  # its work is not committed
        pids = claimer_pids(store)
        conn.invalidate()  # the backend is gone without a commit
    wait_until_backends_end(store, pids)
    recovered = drain(store, T + timedelta(seconds=5))
    (again,) = enqueue(store, "acme", body)  # the same request sent again
    replayed = drain(store, T + timedelta(seconds=10))
    with store.engine.begin() as conn:  # delivered once more, as at-least-once would
        conn.execute(
            text("UPDATE memory_write_queue SET status = 'pending' WHERE id = :id"), {"id": first}
        )
    redrained = drain(store, T + timedelta(seconds=15))

    assert (recovered.reclaimed, recovered.completed) == (1, 1)
    assert (replayed.completed, redrained.completed) == (1, 1)
    stored = documents(store, "acme")
    assert len(stored) == 1 and stored[0]["tag"] == "home"
    done = results(store)
    assert done[again][1] == {"status": "unchanged", "document_id": stored[0]["id"]}
    # Redelivered after a later request for the same document: it changes nothing.
    assert done[first][1] == {"status": "superseded", "document_id": stored[0]["id"]}
    with store.engine.connect() as conn:
        chunks = conn.execute(text("SELECT count(*) FROM document_chunks")).scalar_one()
    assert chunks == len(stored[0]["chunks"])


def run_alone(store: Store, wanted: int) -> None:
    """Claim every due item, run ``wanted`` alone and give the others back."""
    with store.engine.connect() as conn:
        with Session(conn) as session, session.begin():
            claimed = queue.claim(session, "solo", 20, T)
        mine = [item for item in claimed if item.id == wanted]
        run_batch(conn, mine, EMBEDDER, store.settings, T)
        with Session(conn) as session, session.begin():
            ids = [item.id for item in claimed if item.id != wanted]
            session.execute(
                text(
                    "UPDATE memory_write_queue SET status = 'pending', attempts = 0 "
                    "WHERE id = ANY(:ids)"
                ),
                {"ids": ids},
            )


def test_items_of_one_document_finishing_out_of_order_leave_the_last_accepted(
    store: Store,
) -> None:
    v1 = {"name": "notes.md", "text": "# Notes\n\nThe first version.\n"}
    v2 = {"name": "notes.md", "text": "# Notes\n\nThe second version.\n", "tag": "late"}
    a, b = enqueue(store, "acme", v1, v2)
    run_alone(store, b)  # the later item finishes first
    drain(store)
    assert "second version" in documents(store, "acme")[0]["text"]
    assert results(store)[a][1]["status"] == "superseded"

    c, d = enqueue(store, "acme", {**v1, "name": "other.md"}, {**v2, "name": "other.md"})
    (e,) = enqueue(store, "acme", {**v1, "name": "other.md"})  # back to the first text
    run_alone(store, c)
    run_alone(store, e)  # unchanged bytes, but the latest request: it holds the document
    drain(store)  # d, accepted before e, comes last and changes nothing

    other = next(doc for doc in documents(store, "acme") if doc["uri"] == "upload:other.md")
    assert "first version" in other["text"]
    done = results(store)
    assert [done[i][1]["status"] for i in (c, e, d)] == ["added", "unchanged", "superseded"]


def test_a_look_alike_namespace_keeps_its_own_document_of_the_same_name(store: Store) -> None:
    (ann,) = enqueue(store, "ann", {"name": "plan.md", "text": "# Plan\n\nAnn's plan.\n"})
    (anna,) = enqueue(store, "anna", {"name": "plan.md", "text": "# Plan\n\nAnna's plan.\n"})
    drain(store)
    anns = documents(store, "ann")[0]

    purge_documents(store.engine, "ann", document_id=anns["id"], actor="t")

    assert documents(store, "ann") == []
    assert "Anna's plan" in documents(store, "anna")[0]["text"]
    left = results(store)
    assert ann not in left and anna in left  # ann's queued copy went with her document


def test_a_document_that_gives_no_text_completes_as_skipped_and_keeps_the_stored_one(
    store: Store,
) -> None:
    (good,) = enqueue(store, "acme", {"name": "manual.pdf", B64: b64(pdf())})
    drain(store)
    broken = {"name": "manual.pdf", B64: b64(b"%PDF-1.4\nnot really a pdf")}
    script = {"name": "empty.html", "text": "<script>var only = 'code';</script>"}
    bad, empty = enqueue(store, "acme", broken, script)

    report = drain(store)

    assert (report.completed, report.dead) == (2, 0)
    done = results(store)
    assert done[bad][0] == "completed"
    assert (done[bad][1]["status"], done[bad][1]["reason"]) == ("skipped", "unreadable_pdf")
    assert done[empty][1] == {"status": "skipped", "reason": "empty", "detail": "no text"}
    stored = documents(store, "acme")
    assert [d["uri"] for d in stored] == ["upload:manual.pdf"]
    assert "six months" in stored[0]["text"] and done[good][1]["status"] == "added"


class WaitingEmbedder(HashingEmbedder):
    """Embeds once ``go`` is set: holds a drainer between its look at the store and its
    write."""

    def __init__(self, go: threading.Event) -> None:
        super().__init__(384)
        self.go, self.waiting = go, threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.waiting.set()
        assert self.go.wait(timeout=60)
        return super().embed(texts)


def test_an_earlier_item_still_embedding_when_a_later_one_commits_changes_nothing(
    store: Store,
) -> None:
    v1 = {"name": "race.md", "text": "# Race\n\nThe first version.\n"}
    v2 = {"name": "race.md", "text": "# Race\n\nThe second version.\n"}
    a, b = enqueue(store, "acme", v1, v2)
    go = threading.Event()
    slow = WaitingEmbedder(go)
    one = store.settings.model_copy(
        update={"queue": store.settings.queue.model_copy(update={"claim_batch": 1})}
    )
    first = threading.Thread(
        target=drain_once, args=(store.engine, slow, one, "slow", T), kwargs={"max_batches": 1}
    )
    first.start()
    assert slow.waiting.wait(timeout=60)  # it claimed a, found no document, and embeds
    drain(store)  # b, meanwhile, from start to commit
    go.set()
    first.join(timeout=120)

    stored = documents(store, "acme")
    assert len(stored) == 1 and "second version" in stored[0]["text"]
    done = results(store)
    assert done[a] == ("completed", {"status": "superseded", "document_id": None})
    assert done[b][1]["status"] == "added"


def test_fuzzed_documents_of_any_script_and_name_drain_into_exact_spans(store: Store) -> None:
    rng = random.Random(15)
    names = [*VALID_IDS, *(f"doc-{n}.md" for n in range(10))]
    texts = {name: document_text(rng) for name in names}
    enqueue(
        store,
        "fuzz",
        *(
            {"name": n, "format": "markdown", "text": t, "title": FORGED_TITLE}
            for n, t in texts.items()
        ),
    )

    report = drain(store)

    assert (report.completed, report.dead) == (len(names), 0)
    with store.engine.connect() as conn:
        spans = conn.execute(
            text(
                "SELECT d.uri, d.title, d.text AS doc, c.text, c.char_start, c.char_end "
                "FROM document_chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.namespace = 'fuzz'"
            )
        ).all()
    assert {s.uri for s in spans} == {f"upload:{n}" for n in names}
    for span in spans:
        assert span.doc[span.char_start : span.char_end] == span.text
        assert "\n" not in span.title and span.title.startswith("Evil title ## Fake heading")


def test_documents_run_alone_after_the_batch_each_with_its_claims_clock_restarted(
    store: Store,
) -> None:
    with Session(store.engine) as session, session.begin():
        note = queue.enqueue(session, "acme", "ADD_MEMORY", {"content": "a note"}, now=T).id
    docs = enqueue(
        store, "acme", {"name": "a.md", "text": MARKDOWN}, {"name": "b.txt", "text": TEXT}
    )
    later = T + timedelta(hours=1)
    with store.engine.connect() as conn:
        with Session(conn) as session, session.begin():
            claimed = queue.claim(session, "w", 20, T)
        report = run_batch(conn, claimed, EMBEDDER, store.settings, T, clock=later)

    assert (report.claimed, report.completed, report.lost) == (3, 3, 0)
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT id, claimed_at FROM memory_write_queue")).all()
        clocks: dict[int, datetime] = {int(row[0]): row[1] for row in rows}
    assert clocks[note] == T and [clocks[d] for d in docs] == [later, later]
    assert len(documents(store, "acme")) == 2


def test_a_document_whose_claim_was_taken_over_meanwhile_is_not_run(store: Store) -> None:
    (item_id,) = enqueue(store, "acme", {"name": "a.md", "text": MARKDOWN})
    with store.engine.connect() as conn:
        with Session(conn) as session, session.begin():
            claimed = queue.claim(session, "slow", 20, T)
        with Session(store.engine) as session, session.begin():  # another drainer's reclaim
            queue.reclaim(session, T + timedelta(minutes=11), timedelta(minutes=10))
        report = run_batch(conn, claimed, EMBEDDER, store.settings, T)

    assert (report.completed, report.lost) == (0, 1)
    assert documents(store, "acme") == [] and results(store)[item_id][0] == "pending"
