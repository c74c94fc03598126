"""Documents over MCP, as assistants add them: a real ``archivist mcp`` (stdio, and streamable
HTTP with namespace keys), the SDK's client, a real worker draining the queue."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import text

from storage.public_ids import PublicIds
from storage.server.engine import Store
from tests.serving.mcp_support import (
    ARCHIVIST,
    data,
    error,
    http_server,
    keyed,
    new_key,
    server_env,
    stdio,
)
from tests.tasks.documents.samples import MARKDOWN, pdf


def drain(store: Store) -> None:
    """What ``archivist worker`` does, once."""
    env = {**os.environ, **server_env(store.settings)}
    subprocess.run([ARCHIVIST, "worker", "--once"], env=env, check=True, capture_output=True)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def test_stdio_adds_lists_finds_and_deletes_documents(store: Store, tmp_path: Path) -> None:
    key = new_key(store, "kb")[1]

    async def before_drain(client: Any) -> dict[str, Any]:
        garden = {"name": "garden.md", "text": MARKDOWN, "tag": "home"}
        return {
            "garden": data(await client.call_tool("add_document", garden)),
            "passport": data(
                await client.call_tool(
                    "add_document",
                    {"name": "passport", "format": "pdf", "content_base64": b64(pdf())},
                )
            ),
            "listed": data(await client.call_tool("list_documents", {})),
        }

    async def after_drain(client: Any) -> dict[str, Any]:
        listed = data(await client.call_tool("list_documents", {}))["documents"]
        found = data(await client.call_tool("search_memory", {"query": "aphids on the leaves"}))
        garden = next(d for d in listed if d["name"] == "garden.md")
        deleted = data(await client.call_tool("delete_document", {"document_id": garden["id"]}))
        again = error(await client.call_tool("delete_document", {"document_id": garden["id"]}))
        left = data(await client.call_tool("list_documents", {}))["documents"]
        return {"listed": listed, "found": found, "deleted": deleted, "again": again, "left": left}

    async def session(step: Any) -> dict[str, Any]:
        with (tmp_path / "stderr").open("a") as errlog:
            async with stdio(store.settings, "--namespace", "kb", errlog=errlog, key=key) as client:
                return dict(await step(client))

    queued = anyio.run(session, before_drain)
    drain(store)
    seen = anyio.run(session, after_drain)

    assert queued["garden"]["status"] == "queued" and queued["garden"]["name"] == "garden.md"
    # The answers show public ids; garden's queued copy went with the document.
    with store.engine.connect() as conn:
        ids = PublicIds.load(conn)
        rows = conn.execute(text("SELECT id, payload->>'name' FROM memory_write_queue")).all()
    names: dict[int | None, str] = {row[0]: row[1] for row in rows}
    shown = [queued[n]["queue_item"] for n in ("garden", "passport")]
    assert [names.get(ids.take("queue", q)) for q in shown] == [None, "passport"]
    assert ids.take("queue", shown[0]) is not None and not set(shown) & set(names)
    assert queued["listed"] == {"namespace": "kb", "documents": []}  # not stored before a drain
    assert {(d["name"], d["format"], d["tag"]) for d in seen["listed"]} == {
        ("garden.md", "markdown", "home"),
        ("passport", "pdf", None),
    }
    top = seen["found"]["hits"][0]
    assert top["label"] == "[Doc 1]" and top["doc"]["uri"] == "upload:garden.md"
    assert seen["deleted"]["deleted"] is True and seen["deleted"]["chunks"] >= 1
    assert seen["again"].endswith(f"no document {seen['deleted']['document_id']} in namespace 'kb'")
    assert [d["name"] for d in seen["left"]] == ["passport"]
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_stdio_read_only_refuses_to_add_or_delete(store: Store, tmp_path: Path) -> None:
    key = new_key(store, "kb")[1]  # a key that may write, narrowed by --read-only

    async def session() -> list[str]:
        with (tmp_path / "stderr").open("w") as errlog:
            args = ("--namespace", "kb", "--read-only")
            async with stdio(store.settings, *args, errlog=errlog, key=key) as client:
                added = await client.call_tool("add_document", {"name": "a.md", "text": "# A"})
                deleted = await client.call_tool("delete_document", {"document_id": 1})
                data(await client.call_tool("list_documents", {}))
        return [error(added), error(deleted)]

    for refused in anyio.run(session):
        assert refused.endswith("this server is read-only (started with --read-only)")
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memory_write_queue")).scalar_one() == 0


def test_http_keys_add_to_and_see_only_their_own_namespace(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ann = new_key(store, "ann")
    _, anna = new_key(store, "anna")
    _, reader = new_key(store, "ann", read_only=True)
    cap = 5 * 1024 * 1024  # a document at this cap is over the SDK's own 4 MiB body limit
    monkeypatch.setenv("ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES", str(cap))
    at_cap = ("lorem ipsum " * (cap // 12 + 1))[:cap]

    async def annas(url: str) -> None:
        async with keyed(url, anna) as client:
            body = {"name": "plan.md", "text": "# Plan\n\nAnna's quokka plan.\n"}
            data(await client.call_tool("add_document", body))

    async def anns(url: str, annas_id: int) -> dict[str, Any]:
        async with keyed(url, ann) as client, keyed(url, reader) as read_only:
            return {
                "listed": data(await client.call_tool("list_documents", {})),
                "found": data(await client.call_tool("search_memory", {"query": "quokka plan"})),
                "delete": error(
                    await client.call_tool("delete_document", {"document_id": annas_id})
                ),
                "sneak": error(
                    await client.call_tool(
                        "add_document", {"name": "x.md", "text": "x", "namespace": "anna"}
                    )
                ),
                "big": data(
                    await client.call_tool("add_document", {"name": "big.txt", "text": at_cap})
                ),
                "too big": error(
                    await client.call_tool("add_document", {"name": "b.txt", "text": at_cap + "x"})
                ),
                "read only": error(
                    await read_only.call_tool("add_document", {"name": "r.md", "text": "# R"})
                ),
            }

    with http_server(store.settings, tmp_path / "stderr") as url:
        anyio.run(annas, url)
        drain(store)
        with store.engine.connect() as conn:  # what anna's list shows
            real = conn.execute(text("SELECT id FROM documents")).scalar_one()
            annas_id = PublicIds.load(conn).show("document", real)
        seen = anyio.run(anns, url, annas_id)

    assert seen["listed"] == {"namespace": "ann", "documents": []}
    assert all("quokka" not in h["content"] for h in seen["found"]["hits"])
    assert seen["delete"].endswith(f"no document {annas_id} in namespace 'ann'")
    assert "unknown argument(s) ['namespace']" in seen["sneak"]
    assert seen["big"]["status"] == "queued"
    assert "the cap is" in seen["too big"] and "MAX_UPLOAD_BYTES" in seen["too big"]
    assert seen["read only"].endswith("this key is read-only")
    with store.engine.connect() as conn:
        queued = conn.execute(
            text("SELECT namespace, payload->>'name' FROM memory_write_queue ORDER BY id")
        ).all()
        kept = conn.execute(text("SELECT namespace FROM documents")).scalars().all()
    assert [tuple(r) for r in queued] == [("anna", "plan.md"), ("ann", "big.txt")]
    assert kept == ["anna"]
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_bad_documents_are_clear_tool_errors(store: Store, tmp_path: Path) -> None:
    key = new_key(store, "kb")[1]
    calls: list[tuple[dict[str, Any], str]] = [
        ({"text": "x"}, "name: Field required"),
        ({"name": "a.pdf", "text": "%PDF-1.4"}, "a PDF is sent as content_base64"),
        ({"name": "a.md"}, "give text or content_base64, not both and not neither"),
        ({"name": "notes", "text": "x"}, "the name has no known extension"),
        ({"name": "a/b.md", "text": "x"}, "name: holds solidus (U+002F)"),
        ({"name": "a.txt", "content_base64": b64(b"\x00\x01")}, "binary (control characters)"),
        ({"name": "a.txt", "content_base64": "%%%"}, "not base64"),
        ({"name": "a.md", "text": " \n "}, "text: empty"),
        ({"name": "a.md", "text": "x", "format": "docx"}, "format: Input should be"),
        ({"name": "a.md", "text": "x", "tag": "a\nb"}, "tag: must be 1 to 100 printable"),
        ({"name": 7, "text": "x"}, "name: Input should be a valid string"),
    ]

    async def call_all() -> list[str]:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio(store.settings, "--namespace", "kb", errlog=errlog, key=key) as client:
                return [error(await client.call_tool("add_document", a)) for a, _ in calls]

    answers = anyio.run(call_all)

    for (args, expected), answer in zip(calls, answers, strict=True):
        assert expected in answer, (args, answer)
        assert "pydantic" not in answer and "input_value" not in answer, answer
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memory_write_queue")).scalar_one() == 0
    assert "Traceback" not in (tmp_path / "stderr").read_text()
