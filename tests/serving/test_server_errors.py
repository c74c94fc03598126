"""Server errors are server errors: a failing store answers 503 with a fixed message over HTTP
and MCP alike, never the database's text, and the detail goes to the server's log.

The store fails for real: the serving role loses its right to read ``memories`` (in this
module's own database), as a botched grant or migration would leave it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from sqlalchemy import text

from serving import UNAVAILABLE
from storage.server.scoped import SERVING_ROLE
from tests.serving.conftest import Served
from tests.serving.mcp_support import error, http_server, keyed
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DETAIL = "permission denied for table memories"


@pytest.fixture
def unreadable(served: Served) -> Iterator[int]:
    """A memory of namespace ``failing`` that the serving role cannot read for the test."""
    (memory_id,) = put(served.store, "failing", ["the dentist is on Friday"], AT)
    with served.store.engine.begin() as conn:
        conn.execute(text(f"REVOKE SELECT ON memories FROM {SERVING_ROLE}"))
    try:
        yield served.shown(memory_id)[0]
    finally:
        with served.store.engine.begin() as conn:
            conn.execute(text(f"GRANT SELECT ON memories TO {SERVING_ROLE}"))


def test_the_api_answers_a_failing_store_with_503_and_logs_the_detail(
    served: Served, unreadable: int
) -> None:
    with served.client(served.key("failing")) as client:
        fast = client.post("/v1/namespaces/failing/search", json={"query": "dentist"})
        chunked = client.post(  # no Content-Length: FastAPI's endpoint answers, not the fast path
            "/v1/namespaces/failing/search",
            content=iter([b'{"query": ', b'"dentist"}']),
            headers={"content-type": "application/json"},
        )
        primed = client.post("/v1/namespaces/failing/prime", json={"message": "dentist?"})
        one = client.get(f"/v1/namespaces/failing/memories/{unreadable}")
    for reply in (fast, chunked, primed, one):
        assert (reply.status_code, reply.json()) == (503, {"error": UNAVAILABLE}), reply.text
    assert DETAIL in served.log.read_text()


def test_mcp_answers_a_failing_store_with_the_same_fixed_message(
    served: Served, unreadable: int, tmp_path: Path
) -> None:
    key = served.key("failing")
    log = tmp_path / "mcp.log"

    async def main() -> tuple[str, str]:
        async with keyed(url, key) as client:
            search = await client.call_tool("search_memory", {"query": "dentist"})
            primed = await client.call_tool("prime_conversation", {})
        return error(search), error(primed)

    with http_server(served.settings, log) as url:
        answers = anyio.run(main)
    for answer in answers:
        assert answer.endswith(UNAVAILABLE) and DETAIL not in answer, answer
    assert DETAIL in " ".join(log.read_text().split())  # rich wraps its log lines
