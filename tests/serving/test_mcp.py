"""``archivist mcp`` as assistants use it: a real subprocess, the official SDK's client, over
stdio and over streamable HTTP with namespace keys, on the real store."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.public_ids import PublicIds
from storage.server.engine import Store
from tests.serving.mcp_support import (
    ARCHIVIST,
    cited,
    data,
    error,
    http_server,
    keyed,
    new_key,
    revoke,
    seed,
    server_env,
    stdio,
    text_of,
    worker,
)

TOOLS = {
    "search_memory",
    "prime_conversation",
    "remember",
    "forget_memory",
    "recent_episodes",
    "add_document",
    "list_documents",
    "delete_document",
}
ALICE = (
    "My passport expires in May, I have to renew it before the Lisbon trip.",
    "Noted: renew the passport before the Lisbon trip.",
    "Also I am allergic to penicillin, please remember that.",
    "Understood, penicillin allergy noted.",
)
ALICE_ARGS = ("--namespace", "alice")
BOB = (
    "The garage said the passport photo booth is next to the bakery.",
    "Good to know, the booth is beside the bakery.",
    "I need to renew my passport photo there on Monday.",
    "Monday at the booth, noted.",
)


@pytest.fixture
def stores(store: Store) -> Store:
    """Alice's and Bob's conversations, synced; Alice's long-term MEMORY.md."""
    seed(store, "alice", *ALICE)
    seed(store, "bob", *BOB)
    folder = Path(store.settings.memory_root_url) / "alice"
    (folder / "MEMORY.md").write_text("# Alice\n- allergic to penicillin\n")
    return store


async def exercise(client: Client, namespace: str) -> None:
    """List the tools and resources and call each tool as the bound namespace."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOLS and listed["search_memory"].output_schema is not None
    hints = {name: tool.annotations for name, tool in listed.items()}
    assert {name for name, hint in hints.items() if hint and hint.read_only_hint} == {
        "search_memory",
        "prime_conversation",
        "recent_episodes",
        "list_documents",
    }
    assert {name for name, hint in hints.items() if hint and hint.destructive_hint} == {
        "forget_memory",
        "delete_document",
    }
    for tool in listed.values():
        assert tool.description
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (tool.name, name)

    found = cited(await client.call_tool("search_memory", {"query": "passport renew", "limit": 5}))
    assert found["namespace"] == namespace
    top = found["hits"][0]
    assert "passport" in top["content"] and top["session_id"] == f"{namespace}-chat"
    assert top["message_ids"] and top["occurred_at"] and top["memory_id"] > 0
    source = f"Sources: [Memory 1] memory {top['memory_id']} (session {namespace}-chat, messages "
    assert found["sources"].startswith(source)
    assert top["passage"] and top["passage"] in text_of(
        await client.call_tool("search_memory", {"query": "passport renew", "limit": 5})
    )
    budgeted = await client.call_tool(
        "search_memory", {"query": "passport renew", "budget_tokens": 60}
    )
    within = data(budgeted)
    assert within["budget_tokens"] == 60 and 0 < within["tokens_used"] <= 60
    assert text_of(budgeted).startswith(within["context"])
    assert text_of(budgeted).endswith(f"({within['tokens_used']} of 60 tokens)")
    tight = data(await client.call_tool("prime_conversation", {"budget_tokens": 40}))
    assert tight["budget_tokens"] == 40 and tight["tokens_used"] <= 40

    prime = await client.call_tool("prime_conversation", {"first_message": "the trip?"})
    primed = data(prime)
    assert primed["namespace"] == namespace and text_of(prime) == primed["formatted"]
    assert primed["facts"][0]["label"] == "[Memory 1]" and primed["sources"]
    assert primed["formatted"].endswith(primed["sources"])
    episodes = data(await client.call_tool("recent_episodes", {"limit": 3}))["episodes"]
    assert [e["session_id"] for e in episodes] == [f"{namespace}-chat"]

    queued = data(await client.call_tool("remember", {"content": "Likes aisle seats."}))
    assert queued["status"] == "queued" and queued["duplicate"] is False
    gone = data(await client.call_tool("forget_memory", {"memory_id": top["memory_id"]}))
    assert gone == {"memory_id": top["memory_id"], "deleted": True}
    again = cited(await client.call_tool("search_memory", {"query": "passport renew"}))
    assert top["memory_id"] not in [hit["memory_id"] for hit in again["hits"]]  # [Memory 1] again


def test_stdio_serves_the_configured_namespace(stores: Store, tmp_path: Path) -> None:
    key = new_key(stores, "alice")[1]

    async def session() -> tuple[str, str]:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio(stores.settings, *ALICE_ARGS, errlog=errlog, key=key) as client:
                await exercise(client, "alice")
                long_term = await client.read_resource("memory://MEMORY.md")
                daily = await client.read_resource("memory://daily")
        return long_term.contents[0].text, daily.contents[0].text  # type: ignore[union-attr]

    long_term, daily = anyio.run(session)

    assert long_term == "# Alice\n- allergic to penicillin\n"
    assert "<!-- memory/" in daily and "passport" in daily
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_stdio_stdout_carries_the_protocol_alone(stores: Store) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search_memory", "arguments": {"query": "passport"}},
        },
    ]
    request = "".join(json.dumps(m) + "\n" for m in messages)

    process = subprocess.Popen(
        [ARCHIVIST, "mcp", "--namespace", "alice"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **server_env(stores.settings, new_key(stores, "alice")[1])},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(request)
    process.stdin.flush()
    answered = [process.stdout.readline(), process.stdout.readline()]
    rest, _ = process.communicate(timeout=60)  # closes stdin: the server exits

    replies = [json.loads(line) for line in [*answered, *rest.splitlines()]]
    assert [r["id"] for r in replies] == [1, 2]
    assert "passport" in json.dumps(replies[1]["result"])


def test_stdio_read_only_refuses_writes_as_tool_errors(stores: Store, tmp_path: Path) -> None:
    key = new_key(stores, "alice")[1]

    async def session() -> tuple[str, str, int]:
        with (tmp_path / "stderr").open("w") as errlog:
            args = ("--namespace", "alice", "--read-only")
            async with stdio(stores.settings, *args, errlog=errlog, key=key) as client:
                wrote = await client.call_tool("remember", {"content": "Likes tea."})
                forgot = await client.call_tool("forget_memory", {"memory_id": 1})
                found = await client.call_tool("search_memory", {"query": "passport"})
        return error(wrote), error(forgot), len(data(found)["hits"])

    wrote, forgot, hits = anyio.run(session)

    for refused in (wrote, forgot):
        assert "this server is read-only (started with --read-only)" in refused, refused
        assert "key" not in refused  # over stdio there is no key
    assert hits > 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_http_keys_of_two_namespaces_at_once_see_only_their_own(
    stores: Store, tmp_path: Path, mode: str
) -> None:
    _, alice = new_key(stores, "alice")
    _, bob = new_key(stores, "bob")

    async def both(url: str) -> dict[str, Any]:
        async with keyed(url, alice, mode) as a, keyed(url, bob, mode) as b:
            async with anyio.create_task_group() as group:  # the two sessions interleave
                group.start_soon(exercise, a, "alice")
                group.start_soon(exercise, b, "bob")
            alices = data(await a.call_tool("search_memory", {"query": "penicillin allergy"}))
            theirs = alices["hits"][0]["memory_id"]
            return {
                "bob forgets alice's": error(
                    await b.call_tool("forget_memory", {"memory_id": theirs})
                ),
                "alice still has it": data(
                    await a.call_tool("search_memory", {"query": "penicillin"})
                ),
                "bob's search": data(await b.call_tool("search_memory", {"query": "penicillin"})),
                "alice's MEMORY.md": (await a.read_resource("memory://MEMORY.md")).contents[0],
                "bob's MEMORY.md": (await b.read_resource("memory://MEMORY.md")).contents[0],
                "id": theirs,
            }

    with http_server(stores.settings, tmp_path / "stderr") as url:
        seen = anyio.run(both, url)

    assert seen["bob forgets alice's"].endswith(f"no memory {seen['id']} in namespace 'bob'")
    assert seen["id"] in [h["memory_id"] for h in seen["alice still has it"]["hits"]]
    assert all("penicillin" not in h["content"] for h in seen["bob's search"]["hits"])
    assert "penicillin" in seen["alice's MEMORY.md"].text
    assert seen["bob's MEMORY.md"].text == ""
    assert "Traceback" not in (tmp_path / "stderr").read_text()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_http_answers_401_without_a_valid_key(stores: Store, tmp_path: Path) -> None:
    revoked_id, revoked = new_key(stores, "alice")
    revoke(stores, revoked_id)
    _, reader = new_key(stores, "alice", read_only=True)
    later_id, later = new_key(stores, "alice")

    def status(url: str, key: str | None) -> int:
        headers = ACCEPT | ({"Authorization": f"Bearer {key}"} if key else {})
        return httpx.post(url, json=INITIALIZE, headers=headers, timeout=30).status_code

    async def read_only_then_revoked(url: str) -> tuple[str, int]:
        async with keyed(url, reader) as client:
            refused = error(await client.call_tool("remember", {"content": "Likes tea."}))
            hits = len(data(await client.call_tool("search_memory", {"query": "passport"}))["hits"])
        async with keyed(url, later, "legacy") as client:
            await client.call_tool("recent_episodes", {})
            revoke(stores, later_id)
            with pytest.raises(MCPError, match="error response"):  # its HTTP 401
                await client.call_tool("recent_episodes", {})
        return refused, hits

    with http_server(stores.settings, tmp_path / "stderr") as url:
        keys = {"none": None, "bad": "ak_nope", "revoked": revoked, "valid": reader}
        statuses = {name: status(url, key) for name, key in keys.items()}
        refused, hits = anyio.run(read_only_then_revoked, url)
        revoked_in_session = status(url, later)

    assert statuses == {"none": 401, "bad": 401, "revoked": 401, "valid": 200}
    assert revoked_in_session == 401
    assert refused.endswith("this key is read-only") and hits > 0


def test_remembered_is_searchable_within_two_seconds_with_the_worker(
    stores: Store, tmp_path: Path
) -> None:
    key = new_key(stores, "alice")[1]

    async def remember_then_search() -> tuple[float, dict[str, object], bool]:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio(stores.settings, *ALICE_ARGS, errlog=errlog, key=key) as client:
                await client.list_tools()  # the server is up before the clock starts
                started = time.monotonic()
                wrote = {"content": "Alice's locker code is 4711.", "idempotency_key": "locker"}
                queued = data(await client.call_tool("remember", wrote))
                found: list[str] = []
                while not found and time.monotonic() - started < 2.0:
                    hits = data(await client.call_tool("search_memory", {"query": "locker code"}))
                    found = [h["content"] for h in hits["hits"] if "4711" in h["content"]]
                waited = time.monotonic() - started
                again = data(await client.call_tool("remember", wrote))["duplicate"]
        return (waited if found else float("inf")), queued, again

    with worker(stores.settings):
        waited, queued, duplicate = anyio.run(remember_then_search)

    assert queued["status"] == "queued" and queued["duplicate"] is False
    assert waited < 2.0
    assert duplicate is True  # the same idempotency key is not queued twice


def test_remember_takes_when_it_happened(stores: Store, tmp_path: Path) -> None:
    key = new_key(stores, "alice")[1]
    when = "2026-11-02T08:30:00+01:00"

    async def remember() -> tuple[dict[str, Any], str]:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio(stores.settings, *ALICE_ARGS, errlog=errlog, key=key) as client:
                wrote = {"content": "Flew to Lisbon.", "occurred_at": when}
                queued = data(await client.call_tool("remember", wrote))
                naive = {"content": "Flew back.", "occurred_at": "2026-11-05T18:00:00"}
                refused = error(await client.call_tool("remember", naive))
        return queued, refused

    queued, refused = anyio.run(remember)

    with Session(stores.engine) as session:
        real = PublicIds.load(session).take("queue", queued["queue_item"])  # a public id
        payload = session.execute(
            text("SELECT payload FROM memory_write_queue WHERE id = :id"), {"id": real}
        ).scalar_one()
    assert payload["occurred_at"] == "2026-11-02T08:30:00+01:00"
    assert "occurred_at: needs a UTC offset, e.g. 2026-11-20T09:15:00Z" in refused


def test_bad_input_to_every_tool_is_a_clear_tool_error(stores: Store, tmp_path: Path) -> None:
    key = new_key(stores, "alice")[1]
    with Session(stores.engine) as session:
        bobs = session.execute(text("SELECT min(id) FROM memories WHERE namespace = 'bob'"))
        bob_id = int(bobs.scalar_one())
        alices = session.execute(text("SELECT min(id) FROM memories WHERE namespace = 'alice'"))
        alice_id = int(alices.scalar_one())
        ids = PublicIds.load(session)
    bob_shown, alice_shown = ids.show("memory", bob_id), ids.show("memory", alice_id)
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("search_memory", {"query": "x" * 10_001}, "at most 10000 characters"),
        ("search_memory", {"query": "   "}, "empty query"),
        ("search_memory", {"query": "q", "limit": "many"}, "valid integer"),
        ("search_memory", {"query": "q", "limit": 500}, "limit 500 out of range 1..100"),
        ("search_memory", {"query": "q", "kinds": ["gossip"]}, "unknown kind(s) ['gossip']"),
        ("search_memory", {"query": "q", "kinds": "fact"}, "valid list"),
        ("search_memory", {"query": "q", "time_range": "decade"}, "'today'"),
        ("search_memory", {"query": "q", "start": "2026-01-01T00:00:00Z"}, "start and end"),
        (
            "search_memory",
            {"query": "q", "start": "soon", "end": "later"},
            "not an ISO 8601 time such as",
        ),
        ("prime_conversation", {"first_message": "x" * 10_001}, "at most 10000 characters"),
        ("prime_conversation", {"first_message": 42}, "valid string"),
        ("prime_conversation", {"first_message": "hi\x00"}, "first message holds a NUL"),
        ("remember", {}, "Field required"),
        ("remember", {"content": "x" * 20_001}, "at most 20000 characters"),
        ("remember", {"content": "   "}, "content is blank"),
        ("remember", {"content": "ok", "kind": "gossip"}, "'note'"),
        ("remember", {"content": "ok", "importance": 2}, "less than or equal to 1"),
        ("forget_memory", {"memory_id": "abc"}, "valid integer"),
        ("forget_memory", {"memory_id": 999_999}, "no memory 999999 in namespace 'alice'"),
        ("forget_memory", {"memory_id": bob_shown}, f"no memory {bob_shown} in namespace 'alice'"),
        ("recent_episodes", {"limit": 0}, "greater than or equal to 1"),
        ("recent_episodes", {"limit": 51}, "less than or equal to 50"),
        # Never coerced: a number in a string is not a number.
        ("forget_memory", {"memory_id": str(alice_shown)}, "memory_id: Input should be a valid"),
        ("forget_memory", {"memory_id": True}, "memory_id: Input should be a valid integer"),
        ("search_memory", {"query": "q", "limit": "5"}, "limit: Input should be a valid integer"),
        ("recent_episodes", {"limit": 2.0}, "limit: Input should be a valid integer"),
        ("remember", {"content": "ok", "importance": "0.5"}, "importance: Input should be a"),
        # Never dropped unread: the namespace is the server's, whatever a model sends.
        ("search_memory", {"query": "passport", "namespace": "bob"}, "unknown argument(s)"),
        ("forget_memory", {"memory_id": bob_shown, "namespace": "bob"}, "the key's)"),
        ("remember", {"content": "ok", "tags": ["x"]}, "['tags']; remember takes ["),
    ]

    async def call_all() -> list[str]:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio(stores.settings, *ALICE_ARGS, errlog=errlog, key=key) as client:
                answers = [error(await client.call_tool(name, args)) for name, args, _ in calls]
                data(await client.call_tool("search_memory", {"query": "passport"}))
        return answers

    answers = anyio.run(call_all)

    for (name, args, expected), answer in zip(calls, answers, strict=True):
        assert expected in answer, (name, args, answer)
        # What a model reads: the field and the rule, not pydantic's links or the input.
        assert "pydantic" not in answer and "input_value" not in answer, answer
    with Session(stores.engine) as session:
        for kept in (bob_id, alice_id):
            left = session.execute(
                text("SELECT count(*) FROM memories WHERE id = :id"), {"id": kept}
            )
            assert left.scalar_one() == 1
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_http_keeps_no_sessions_so_one_key_cannot_crowd_out_another(
    stores: Store, tmp_path: Path
) -> None:
    _, reader = new_key(stores, "alice", read_only=True)
    _, bob = new_key(stores, "bob")

    async def bobs_search(url: str) -> dict[str, Any]:
        async with keyed(url, bob) as client:
            return data(await client.call_tool("search_memory", {"query": "passport"}))

    with http_server(stores.settings, tmp_path / "stderr") as url:
        headers = ACCEPT | {"Authorization": f"Bearer {reader}"}
        with httpx.Client(headers=headers, timeout=30) as client:
            opened = [client.post(url, json=INITIALIZE) for _ in range(200)]  # never closed
        found = anyio.run(bobs_search, url)

    assert {reply.status_code for reply in opened} == {200}
    # No session id handed out: nothing is kept for a client between its requests, so
    # nothing one key opens can fill a pool that another key needs.
    assert [r.headers.get("mcp-session-id") for r in opened] == [None] * len(opened)
    assert found["namespace"] == "bob" and found["hits"]
