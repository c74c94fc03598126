"""The HTTP API and MCP take the fuzz values of every other door (``tests.fuzz_values``):
each valid one is queued, each hostile one refused with a message naming its field and no
server error, and the namespace's search and priming answer afterwards. Their documents'
door (``add_document``) takes the names, texts and field names too."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import text

from storage.kernel.inputs import printable
from storage.kernel.settings import Settings
from storage.server.engine import Store, open_store
from tests.fuzz_values import (
    BAD_B64,
    BAD_BUDGETS,
    BAD_IDS,
    BAD_KEYS,
    BAD_TEXTS,
    BAD_TIMES,
    VALID_BUDGETS,
    VALID_IDS,
    VALID_TIMES,
    document_text,
)
from tests.serving.conftest import Served
from tests.serving.mcp_support import data, error, new_key, stdio


def _queued(store: Store, namespace: str) -> int:
    with store.engine.connect() as conn:
        found = conn.execute(
            text("SELECT count(*) FROM memory_write_queue WHERE namespace = :ns"), {"ns": namespace}
        )
        return int(found.scalar_one())


JSON = {"content-type": "application/json"}


def _raw(body: dict[str, Any]) -> bytes:
    """JSON as a client may send it: lone surrogates and NUL escaped, as JSON allows."""
    return json.dumps(body).encode()


def test_the_api_queues_each_valid_time_and_refuses_each_hostile_value(served: Served) -> None:
    namespace = "fz-api"
    with served.client(served.key(namespace)) as client:
        path = f"/v1/namespaces/{namespace}/memories"
        valid = [
            client.post(path, json={"content": "at the edge", "occurred_at": at})
            for at in VALID_TIMES
        ]
        hostile = [("occurred_at", {"content": "x", "occurred_at": at}) for at in BAD_TIMES]
        hostile += [("content", {"content": t}) for t in BAD_TEXTS]
        hostile += [(key, {"content": "x", key: 1}) for key in BAD_KEYS]
        refused = [
            (field, client.post(path, content=_raw(body), headers=JSON)) for field, body in hostile
        ]
        search = f"/v1/namespaces/{namespace}/search"
        bounds = [
            client.post(search, json={"query": "q", "start": at, "end": "2026-11-20T00:00:00Z"})
            for at in BAD_TIMES
        ]
        after = client.post(search, json={"query": "at the edge"})
        primed = client.post(f"/v1/namespaces/{namespace}/prime", json={"message": "hello"})

    assert [r.status_code for r in valid] == [202] * len(VALID_TIMES), [r.text for r in valid]
    for field, reply in refused:
        assert reply.status_code == 422, (field, reply.status_code, reply.text)
        shown = reply.json()["error"]
        assert "\x00" not in shown and "Traceback" not in shown
        # A field name that is not Unicode (a lone surrogate) leaves no field to name.
        named = "body" if field == "\ud800" else field
        assert shown.startswith(f"{printable(named)}: "), (field, shown)
    for reply in bounds:
        assert reply.status_code == 422 and "start" in reply.json()["error"], reply.text
    assert after.status_code == 200 and primed.status_code == 200, (after.text, primed.text)
    assert _queued(served.store, namespace) == len(VALID_TIMES)
    assert "Traceback" not in served.log.read_text()


def test_the_api_takes_each_valid_budget_and_refuses_each_hostile_one(served: Served) -> None:
    namespace = "fz-budget"
    with served.client(served.key(namespace)) as client:
        search, prime = f"/v1/namespaces/{namespace}/search", f"/v1/namespaces/{namespace}/prime"
        valid = [
            client.post(search, json={"query": "q", "budget_tokens": b}) for b in VALID_BUDGETS
        ]
        valid += [client.post(prime, json={"budget_tokens": b}) for b in VALID_BUDGETS]
        refused = [
            client.post(
                path,
                json={"query": "q", "budget_tokens": b} if path == search else {"budget_tokens": b},
            )
            for path in (search, prime)
            for b in BAD_BUDGETS
            if b is not None  # null is "no budget"
        ]

    assert [r.status_code for r in valid] == [200] * len(valid), [r.text for r in valid]
    for reply in refused:
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"].startswith("budget_tokens: "), reply.text
    assert "Traceback" not in served.log.read_text()


def _sendable(value: object) -> bool:
    """Whether the SDK's client can send it (it refuses to encode a lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def test_mcp_refuses_each_hostile_value_as_a_tool_error(settings: Settings, tmp_path: Path) -> None:
    store = open_store(settings)
    key = new_key(store, "fz-mcp")[1]
    calls: list[tuple[str, dict[str, Any]]] = [
        *[
            ("search_memory", {"query": "q", "start": at, "end": "2026-11-20T00:00:00Z"})
            for at in BAD_TIMES
        ],
        *[("remember", {"content": t}) for t in BAD_TEXTS if _sendable(t)],
        *[("search_memory", {"query": "q", key: 1}) for key in BAD_KEYS if _sendable(key)],
        *[
            ("search_memory", {"query": "q", "budget_tokens": b})
            for b in BAD_BUDGETS
            if b is not None
        ],
        *[("prime_conversation", {"budget_tokens": b}) for b in BAD_BUDGETS if b is not None],
    ]

    async def call_all() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio(settings, "--namespace", "fz-mcp", errlog=errlog, key=key) as client:
                answers = [error(await client.call_tool(name, args)) for name, args in calls]
                valid = data(await client.call_tool("remember", {"content": "a valid memory"}))
                found = data(await client.call_tool("search_memory", {"query": "valid"}))
        return answers, valid, found

    answers, valid, found = anyio.run(call_all)

    for (name, args), answer in zip(calls, answers, strict=True):
        assert answer and "Traceback" not in answer, (name, args)
    assert all("start" in a for a in answers[: len(BAD_TIMES)]), answers[: len(BAD_TIMES)]
    budgets = answers[-2 * (len(BAD_BUDGETS) - 1) :]
    assert all("budget_tokens" in a for a in budgets), budgets
    assert valid["status"] == "queued" and found["namespace"] == "fz-mcp"
    assert _queued(store, "fz-mcp") == 1
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_the_api_documents_door_queues_each_valid_name_and_refuses_each_hostile_value(
    served: Served,
) -> None:
    namespace = "fz-docs"
    path = f"/v1/namespaces/{namespace}/documents"
    rng = random.Random(33)
    with served.client(served.key(namespace)) as client:
        valid = [
            client.post(path, json={"name": name, "format": "markdown", "text": text})
            for name in VALID_IDS
            for text in [document_text(rng)]
        ]
        hostile = [("name", {"name": n, "format": "text", "text": "x"}) for n in BAD_IDS]
        hostile += [("text", {"name": "a.md", "text": t}) for t in BAD_TEXTS if t is not None]
        hostile += [("title", {"name": "a.md", "text": "x", "title": t}) for t in BAD_TEXTS[:3]]
        hostile += [("tag", {"name": "a.md", "text": "x", "tag": t}) for t in BAD_TEXTS[:3]]
        hostile += [("content_base64", {"name": "a.txt", "content_base64": v}) for v in BAD_B64]
        hostile += [(key, {"name": "a.md", "text": "x", key: 1}) for key in BAD_KEYS]
        refused = [
            (field, client.post(path, content=_raw(body), headers=JSON)) for field, body in hostile
        ]
        listed = client.get(path)

    assert [r.status_code for r in valid] == [202] * len(VALID_IDS), [r.text for r in valid]
    for field, reply in refused:
        assert reply.status_code == 422, (field, reply.status_code, reply.text)
        shown = reply.json()["error"]
        assert "\x00" not in shown and "Traceback" not in shown
        named = "body" if field == "\ud800" else field
        assert shown.startswith(f"{printable(named)}: "), (field, shown)
    assert listed.status_code == 200 and listed.json()["documents"] == []  # not drained yet
    assert _queued(served.store, namespace) == len(VALID_IDS)
    assert "Traceback" not in served.log.read_text()


def test_mcp_add_document_refuses_each_hostile_value_as_a_tool_error(
    settings: Settings, tmp_path: Path
) -> None:
    store = open_store(settings)
    key = new_key(store, "fz-mcp-docs")[1]
    calls: list[dict[str, Any]] = [
        *[{"name": n, "format": "text", "text": "x"} for n in BAD_IDS if _sendable(n)],
        *[{"name": "a.md", "text": t} for t in BAD_TEXTS if _sendable(t)],
        *[{"name": "a.md", "text": "x", "title": t} for t in BAD_TEXTS[:3] if _sendable(t)],
        *[{"name": "a.txt", "content_base64": v} for v in BAD_B64],
        *[{"name": "a.md", "text": "x", key: 1} for key in BAD_KEYS if _sendable(key)],
    ]
    rng = random.Random(33)
    texts = [document_text(rng) for _ in range(5)]

    async def call_all() -> tuple[list[str], list[dict[str, Any]]]:
        with (tmp_path / "stderr").open("w") as errlog:
            args = ("--namespace", "fz-mcp-docs")
            async with stdio(settings, *args, errlog=errlog, key=key) as client:
                answers = [error(await client.call_tool("add_document", args)) for args in calls]
                valid = [
                    data(await client.call_tool("add_document", {"name": f"d{n}.md", "text": t}))
                    for n, t in enumerate(texts)
                ]
        return answers, valid

    answers, valid = anyio.run(call_all)

    for args, answer in zip(calls, answers, strict=True):
        assert answer and "Traceback" not in answer and "pydantic" not in answer, (args, answer)
    assert [v["status"] for v in valid] == ["queued"] * len(texts)
    assert _queued(store, "fz-mcp-docs") == len(texts)
    assert "Traceback" not in (tmp_path / "stderr").read_text()
