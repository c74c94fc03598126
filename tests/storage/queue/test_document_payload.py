"""The queue's door for documents (``ADD_DOCUMENT``): the input gate's kinds and the documents'
own rules, applied at enqueue on the real store, so nothing refused is ever stored."""

from __future__ import annotations

import base64
import codecs
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.kernel.errors import InputError, TooLarge
from storage.kernel.settings import DocumentSettings, Settings
from storage.queue import table as queue
from storage.server.engine import Store
from tests.fuzz_values import BAD_IDS, BAD_KEYS, BAD_TEXTS, VALID_IDS
from tests.tasks.documents.samples import MARKDOWN, pdf


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def put(store: Store, payload: Any, settings: Settings | None = None) -> int:
    with Session(store.engine) as session, session.begin():
        return queue.enqueue(session, "acme", "ADD_DOCUMENT", payload, settings=settings).id


def stored(store: Store) -> list[dict[str, Any]]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT payload FROM memory_write_queue ORDER BY id"))
        return [r.payload for r in rows]


UTF16 = "The boiler's code is 4711; call Jürgen."
ACCEPTED: list[dict[str, Any]] = [
    {"name": "garden.md", "text": MARKDOWN, "tag": "home", "title": "Garden\nguide"},
    {"name": "notes", "format": "markdown", "text": "# Notes\n\nfine"},
    {"name": "passport.pdf", "content_base64": b64(pdf())},
    {"name": "scan", "format": "pdf", "content_base64": b64(pdf())},
    {"name": "boiler.txt", "content_base64": b64(codecs.BOM_UTF16_LE + UTF16.encode("utf-16-le"))},
    {"name": "wrapped.txt", "content_base64": "aGVsbG8g\nd29ybGQ=\n"},  # MIME line breaks
]


def test_each_kind_of_document_is_queued_with_its_label_on_one_line(store: Store) -> None:
    ids = [put(store, payload) for payload in ACCEPTED]

    assert len(set(ids)) == len(ACCEPTED)
    payloads = stored(store)
    assert payloads[0]["title"] == "Garden guide"  # a Label: one line
    assert payloads[-1]["content_base64"] == "aGVsbG8gd29ybGQ="


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"name": "a.md"}, "give text or content_base64, not both and not neither"),
    ({"name": "a.md", "text": "x", "content_base64": "eA=="}, "not both and not neither"),
    ({"name": "a.pdf", "text": "%PDF-1.4"}, "a PDF is sent as content_base64"),
    ({"name": "notes", "text": "x"}, "the name has no known extension"),
    ({"name": "a.docx", "text": "x"}, "the name has no known extension (.md, .markdown"),
    ({"name": "a.md", "text": "x", "format": "docx"}, "format: Input should be"),
    ({"name": "a.txt", "content_base64": "not base64!"}, "content_base64: not base64"),
    ({"name": "a.txt", "content_base64": "eA="}, "content_base64: not base64"),
    ({"name": "a.md", "text": "   \n\t "}, "text: empty"),
    ({"name": "a.md", "text": "bell \x07 inside"}, "text: binary (control characters)"),
    (
        {"name": "a.txt", "content_base64": b64(codecs.BOM_UTF16_LE + b"\x00\xdc")},
        "content_base64: binary (not UTF-16 (its byte order mark) at byte 2)",
    ),
    ({"name": "a.txt", "content_base64": b64("café latin".encode("latin-1"))}, "binary (not UTF-8"),
    ({"name": "a.md", "text": "x", "tag": ""}, "tag: must be 1 to 100 printable characters"),
    ({"name": "a.md", "text": "x", "tag": "a\nb"}, "tag: must be 1 to 100 printable"),
    ({"name": "a.md", "text": "x", "title": "t" * 301}, "title: String should have at most"),
    ({"name": "a.md", "text": "x", "namespace": "bob"}, "namespace: Extra inputs"),
]


@pytest.mark.parametrize(("payload", "said"), REFUSED)
def test_a_bad_document_is_refused_at_enqueue_naming_its_field(
    store: Store, payload: dict[str, Any], said: str
) -> None:
    with pytest.raises(InputError) as refused:
        put(store, payload)

    assert said in str(refused.value)
    assert "bell" not in str(refused.value) and "latin" not in str(refused.value)  # no values
    assert stored(store) == []


def test_the_gate_of_every_door_judges_names_texts_and_field_names(store: Store) -> None:
    for valid in VALID_IDS:
        put(store, {"name": valid, "format": "text", "text": "fine"})
    for name in BAD_IDS:
        with pytest.raises(InputError, match="name"):
            put(store, {"name": name, "format": "text", "text": "fine"})
    for value in BAD_TEXTS:
        with pytest.raises(InputError, match="text"):
            put(store, {"name": "a.md", "text": value})
    for key in BAD_KEYS:
        with pytest.raises(InputError, match="a field name holds"):
            put(store, {"name": "a.md", "text": "fine", key: 1})

    assert [p["name"] for p in stored(store)] == VALID_IDS


def test_a_document_over_the_cap_is_refused_as_too_large_naming_the_setting(store: Store) -> None:
    small = Settings(documents=DocumentSettings(max_upload_bytes=1024))
    exactly = "x" * 1024

    put(store, {"name": "fits.txt", "text": exactly}, small)
    with pytest.raises(TooLarge) as text_over:
        put(store, {"name": "big.txt", "text": exactly + "é"}, small)
    with pytest.raises(TooLarge) as bytes_over:
        put(store, {"name": "big.pdf", "content_base64": b64(b"%" * 1025)}, small)

    assert "text: the document is 1026 bytes; the cap is 1024" in str(text_over.value)
    assert "content_base64: the document is 1025 bytes" in str(bytes_over.value)
    assert "ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES" in str(bytes_over.value)
    assert [p["name"] for p in stored(store)] == ["fits.txt"]
