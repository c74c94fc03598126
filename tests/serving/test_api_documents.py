"""Documents over the HTTP API, through a real ``archivist api`` on loopback and a real
``archivist worker --once``: added (202, queued), drained with ``docs ingest``'s steps,
found by search, listed, followed by their queue item, deleted; never across namespaces."""

from __future__ import annotations

import base64
import subprocess
from typing import Any

from sqlalchemy import text

from serving import SearchAnswer
from storage.public_ids import PublicIds
from tests.serving.conftest import ARCHIVIST, Served
from tests.tasks.documents.samples import HTML, MARKDOWN, pdf

JSON = {"content-type": "application/json"}


def drain(served: Served) -> None:
    """What ``archivist worker`` does, once."""
    subprocess.run(
        [ARCHIVIST, "worker", "--once"], env=served.environment(), check=True, capture_output=True
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def rows(served: Served, sql: str, **params: Any) -> list[Any]:
    with served.store.engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def public_ids(served: Served) -> PublicIds:
    """The store's public ids, which the API shows and takes instead of the real ones."""
    with served.store.engine.connect() as conn:
        return PublicIds.load(conn)


def test_a_document_is_queued_drained_searched_listed_and_deleted(served: Served) -> None:
    ns = "handbook"
    path = f"/v1/namespaces/{ns}/documents"
    garden = {"name": "garden.md", "text": MARKDOWN, "tag": "home", "idempotency_key": "g1"}
    with served.client(served.key(ns)) as client:
        added = client.post(path, json=garden)
        again = client.post(path, json=garden)
        scan = client.post(path, json={"name": "passport.pdf", "content_base64": b64(pdf())})
        page = client.post(path, json={"name": "bike", "format": "html", "text": HTML})
        pending = client.get(f"/v1/namespaces/{ns}/queue/{added.json()['queue_item']}").json()
        drain(served)
        done = client.get(f"/v1/namespaces/{ns}/queue/{added.json()['queue_item']}").json()
        listed = client.get(path).json()["documents"]
        hits = client.post(
            f"/v1/namespaces/{ns}/search", json={"query": "aphids under the leaves"}
        ).json()
        passport = client.post(
            f"/v1/namespaces/{ns}/search", json={"query": "renew passport", "kinds": ["doc"]}
        ).json()
        doc_id = next(d["id"] for d in listed if d["name"] == "garden.md")
        deleted = client.delete(f"{path}/{doc_id}")
        gone = client.delete(f"{path}/{doc_id}")
        after = client.post(
            f"/v1/namespaces/{ns}/search", json={"query": "aphids under the leaves"}
        ).json()
        left = client.get(path).json()["documents"]

    assert added.status_code == 202, added.text
    assert added.json() == {
        "queue_item": added.json()["queue_item"],
        "duplicate": False,
        "status": "queued",
        "name": "garden.md",
    }
    assert again.json()["duplicate"] is True and again.json()["queue_item"] == pending["queue_item"]
    assert scan.status_code == page.status_code == 202
    assert (pending["op"], pending["status"]) == ("ADD_DOCUMENT", "pending")
    assert "payload" not in pending and "text" not in str(pending)
    assert done["status"] == "completed" and done["result"]["status"] == "added"
    assert {d["name"] for d in listed} == {"garden.md", "passport.pdf", "bike"}
    # Public ids only: the queue item's result names the document as the list does.
    ids = public_ids(served)
    real = ids.take("document", doc_id)
    assert done["result"]["document_id"] == doc_id and real is not None
    reals = {r[0] for r in rows(served, "SELECT id FROM documents WHERE namespace = :ns", ns=ns)}
    assert {ids.take("document", d["id"]) for d in listed} == reals | {real}
    assert not {d["id"] for d in listed} & (reals | {real})
    assert ids.take("queue", added.json()["queue_item"]) is not None
    by_name = {d["name"]: d for d in listed}
    garden_row = by_name["garden.md"]
    assert garden_row["uri"] == "upload:garden.md" and garden_row["tag"] == "home"
    assert by_name["bike"]["title"] == "Bicycle care" and by_name["bike"]["format"] == "html"
    assert by_name["passport.pdf"]["format"] == "pdf" and by_name["passport.pdf"]["chunks"] >= 1
    top = hits["hits"][0]
    assert top["kind"] == "doc" and top["label"] == "[Doc 1]" and "Aphids" in top["content"]
    assert top["doc"]["uri"] == "upload:garden.md" and top["doc"]["heading"].endswith("Pests")
    documented = SearchAnswer.model_validate(hits)  # a chunk's hit is the one documented
    assert set(top) == set(type(documented.hits[0]).model_fields)
    assert "six months" in passport["hits"][0]["content"]
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    assert deleted.json()["chunks"] == by_name["garden.md"]["chunks"]
    assert gone.status_code == 404
    assert all(h["doc"]["uri"] != "upload:garden.md" for h in after["hits"] if h.get("doc"))
    assert {d["name"] for d in left} == {"passport.pdf", "bike"}
    # Its queued copy went with it; the audit names the key, never the text.
    queued = rows(served, "SELECT payload->>'name' FROM memory_write_queue WHERE namespace = :ns",
                  ns=ns)  # fmt: skip
    assert sorted(r[0] for r in queued) == ["bike", "passport.pdf"]
    actions = rows(
        served,
        "SELECT action, target FROM audit_log WHERE namespace = :ns ORDER BY id",
        ns=ns,
    )
    assert [a for a, _ in actions].count("add_document") == 3
    assert ("delete_document", f"document:{real}") in [tuple(a) for a in actions]  # real ids


def test_a_read_only_key_and_a_look_alike_namespace_are_refused(served: Served) -> None:
    body = {"name": "plan.md", "text": "# Plan\n\nAnna's secret plan.\n"}
    with served.client(served.key("anna")) as anna:
        assert anna.post("/v1/namespaces/anna/documents", json=body).status_code == 202
    drain(served)
    ids = public_ids(served)
    ((real,),) = rows(served, "SELECT id FROM documents WHERE namespace = 'anna'")
    ((item_of_anna,),) = rows(served, "SELECT id FROM memory_write_queue WHERE namespace = 'anna'")
    annas = [ids.show("document", real)]  # as anna's list shows it
    with served.client(served.key("ann")) as ann:
        into = ann.post("/v1/namespaces/anna/documents", json=body)
        listed = ann.get("/v1/namespaces/anna/documents")
        deleted = ann.delete(f"/v1/namespaces/anna/documents/{annas[0]}")
        mine = ann.delete(f"/v1/namespaces/ann/documents/{annas[0]}")
        own_list = ann.get("/v1/namespaces/ann/documents").json()
        item = ann.get(f"/v1/namespaces/ann/queue/{ids.show('queue', item_of_anna)}")
        found = ann.post("/v1/namespaces/ann/search", json={"query": "secret plan"}).json()
    with served.client(served.key("anna", read_only=True)) as reader:
        read_only = reader.post("/v1/namespaces/anna/documents", json=body)
        read_delete = reader.delete(f"/v1/namespaces/anna/documents/{annas[0]}")
        readable = reader.get("/v1/namespaces/anna/documents")

    for refused in (into, listed, deleted):
        assert refused.status_code == 403, refused.text
    assert mine.status_code == 404  # under ann's key, anna's id is not there
    assert own_list == {"namespace": "ann", "documents": []}
    assert item.status_code == 404 and found["hits"] == []
    assert read_only.status_code == read_delete.status_code == 403
    assert read_only.json() == {"error": "this key is read-only"}
    assert [d["id"] for d in readable.json()["documents"]] == [annas[0]]
    assert len(rows(served, "SELECT id FROM documents WHERE namespace LIKE 'ann%'")) == 1


def test_sizes_formats_and_bad_documents_get_one_clear_error(served: Served) -> None:
    cap = served.settings.documents.max_upload_bytes
    path = "/v1/namespaces/sizes/documents"
    with served.client(served.key("sizes")) as client:
        over_cap = client.post(path, json={"name": "big.txt", "text": "x" * (cap + 1)})
        over_body = client.post(
            path, content=b'{"name": "a.txt", "text": "' + b"x" * (3 * cap + 70_000) + b'"}',
            headers=JSON,
        )  # fmt: skip
        at_cap = client.post(path, json={"name": "edge.txt", "text": "é" * (cap // 2)})
        answers = {
            "pdf as text": client.post(path, json={"name": "a.pdf", "text": "%PDF-1.4"}),
            "no format": client.post(path, json={"name": "notes", "text": "x"}),
            "both": client.post(path, json={"name": "a.md", "text": "x", "content_base64": "eA=="}),
            "binary": client.post(path, json={"name": "a.txt", "content_base64": b64(b"\x00\x01")}),
            "bad base64": client.post(path, json={"name": "a.txt", "content_base64": "%%%"}),
            "blank": client.post(path, json={"name": "a.md", "text": " \n "}),
            "bad name": client.post(path, json={"name": "a/b.md", "text": "x"}),
            "no name": client.post(path, json={"text": "x"}),
        }
        search = client.post(path.replace("documents", "search"), json={"query": "x" * 70_000})

    assert over_cap.status_code == 413, over_cap.text
    assert over_cap.json()["error"] == (
        f"text: the document is {cap + 1} bytes; the cap is {cap} "
        "(ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES); add larger files with archivist docs ingest"
    )
    assert over_body.status_code == 413
    assert "ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES" in over_body.json()["error"]
    assert at_cap.status_code == 202, at_cap.text  # escaped as JSON, it is 3 times the cap
    assert search.status_code == 413  # other routes keep the ordinary body limit
    said = {name: (r.status_code, r.json()["error"]) for name, r in answers.items()}
    assert said == {
        "pdf as text": (422, "body: a PDF is sent as content_base64 (its bytes), not as text"),
        "no format": (422, said["no format"][1]),
        "both": (422, "body: give text or content_base64, not both and not neither"),
        "binary": (422, "content_base64: binary (control characters)"),
        "bad base64": (422, said["bad base64"][1]),
        "blank": (422, "text: empty"),
        "bad name": (422, said["bad name"][1]),
        "no name": (422, "name: Field required"),
    }
    assert said["no format"][1].startswith("body: the name has no known extension (.md,")
    assert said["bad base64"][1].startswith("content_base64: not base64")
    assert said["bad name"][1].startswith("name: holds solidus (U+002F)")
    assert "Traceback" not in served.log.read_text()
