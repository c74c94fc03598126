"""The MCP tools' arguments: typed, bounded and described, as ``tools/list`` shows them to
a model. Bounds match the HTTP API's bodies (``serving._api_models``); what depends on
configuration (``ARCHIVIST_RETRIEVAL__MAX_LIMIT``) is checked by the service. An argument
a tool does not take is refused (``StrictArguments``), as the API refuses unknown fields.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from serving._api_models import TimeRangeName
from serving._service import MAX_EPISODES
from storage.inputs import Instant
from storage.queue import MemoryKind

Query = Annotated[
    str,
    Field(description="What to look for, in the user's words.", min_length=1, max_length=10_000),
]
Limit = Annotated[
    int,
    Field(
        description="How many memories to return, best first (at most "
        "ARCHIVIST_RETRIEVAL__MAX_LIMIT, 100 unless configured).",
        ge=1,
        le=1000,
    ),
]
Range = Annotated[
    TimeRangeName | None,
    Field(
        description="Only memories from this window: today, this week, this month, the last "
        "30 days (recent) or all. Or give start and end instead."
    ),
]
Start = Annotated[
    Instant | None,
    Field(description="Only memories from this moment on (ISO 8601 with a UTC offset; with end)."),
]
End = Annotated[
    Instant | None,
    Field(description="Only memories up to this moment (ISO 8601 with a UTC offset; with start)."),
]
Kinds = Annotated[
    list[str] | None,
    Field(
        description="Only these kinds: turn, fact, preference, decision, note, goal, episode, "
        "task_card, long_term, and doc (chunks of the user's documents).",
        max_length=20,
    ),
]
FirstMessage = Annotated[
    str | None,
    Field(description="The conversation's first message, if there is one yet.", max_length=10_000),
]
Content = Annotated[
    str,
    Field(
        description="The memory, as one self-contained sentence.", min_length=1, max_length=20_000
    ),
]
Kind = Annotated[MemoryKind, Field(description="What sort of memory it is.")]
Importance = Annotated[
    float | None, Field(description="How much it matters, 0 to 1 (default 0.5).", ge=0, le=1)
]
IdempotencyKey = Annotated[
    str | None,
    Field(
        description="Any text naming this write: the same key again is not queued twice.",
        min_length=1,
        max_length=200,
    ),
]
MemoryId = Annotated[int, Field(description="The memory_id of a search hit.", ge=1, le=2**63 - 1)]
EpisodeLimit = Annotated[
    int, Field(description="How many sessions, newest first.", ge=1, le=MAX_EPISODES)
]


class StrictArguments:
    """Server middleware: a tool call with an argument its tool does not take is a tool error
    that names it. The SDK would drop it unread: a model that sent ``namespace`` would take
    another namespace's answer for the one it asked about."""

    def __init__(self, tools: Iterable[Callable[..., Any]]) -> None:
        self.takes = {fn.__name__: frozenset(inspect.signature(fn).parameters) for fn in tools}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        refused = self.refusal(ctx.params) if ctx.method == "tools/call" else None
        if refused is None:
            return await call_next(ctx)
        return CallToolResult(content=[TextContent(type="text", text=refused)], is_error=True)

    def refusal(self, params: Mapping[str, Any] | None) -> str | None:
        """What is wrong with a call's arguments; None: nothing this checks (the SDK checks
        their types, and answers an unknown tool)."""
        name = str((params or {}).get("name"))
        arguments = (params or {}).get("arguments")
        takes = self.takes.get(name)
        if takes is None or not isinstance(arguments, Mapping) or set(arguments) <= takes:
            return None
        unknown = sorted(set(arguments) - takes)
        message = f"unknown argument(s) {unknown}; {name} takes {sorted(takes)}"
        if "namespace" in unknown:
            message += " (the namespace is the server's: its --namespace, or the key's)"
        return message
