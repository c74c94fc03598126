"""The MCP tools' arguments: typed, bounded and described, as ``tools/list`` shows them to
a model. Bounds match the HTTP API's bodies (``serving._api_models``); what depends on
configuration (``ARCHIVIST_RETRIEVAL__MAX_LIMIT``) is checked by the service. An argument
a tool does not take is refused (``StrictArguments``), as the API refuses unknown fields.

Numbers and text are strict: ``{"memory_id": "1"}`` is refused, not read as memory 1 (the
SDK validates in pydantic's lax mode, which would coerce it). A refusal names each field
and what it should be, never the value sent or pydantic's links.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp_types import CallToolResult, TextContent
from pydantic import Field, Strict, ValidationError

from serving._api_models import OccurredAt, TimeRangeName
from serving._service import MAX_EPISODES
from storage.kernel.inputs import MAX_BUDGET_TOKENS, Instant, TokenBudget, printable
from storage.queue import DocumentFormat, MemoryKind

Query = Annotated[
    str,
    Strict(),
    Field(description="What to look for, in the user's words.", min_length=1, max_length=10_000),
]
Limit = Annotated[
    int,
    Strict(),
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
Budget = Annotated[
    TokenBudget | None,
    Field(
        description="Fit the answer into this many tokens (all-MiniLM-L6-v2's tokenizer, "
        f"1 to {MAX_BUDGET_TOKENS}): the best passages that fit, each once, with citations, "
        "and tokens_used.",
    ),
]
FirstMessage = Annotated[
    str | None,
    Strict(),
    Field(description="The conversation's first message, if there is one yet.", max_length=10_000),
]
Content = Annotated[
    str,
    Strict(),
    Field(
        description="The memory, as one self-contained sentence.", min_length=1, max_length=20_000
    ),
]
Kind = Annotated[MemoryKind, Field(description="What sort of memory it is.")]
Importance = Annotated[
    float | None,
    Strict(),
    Field(description="How much it matters, 0 to 1 (default 0.5).", ge=0, le=1),
]
Occurred = Annotated[
    OccurredAt | None,
    Field(description="When it happened (ISO 8601 with a UTC offset; default now)."),
]
IdempotencyKey = Annotated[
    str | None,
    Strict(),
    Field(
        description="Any text naming this write: the same key again is not queued twice.",
        min_length=1,
        max_length=200,
    ),
]
MemoryId = Annotated[
    int, Strict(), Field(description="The memory_id of a search hit.", ge=1, le=2**63 - 1)
]
DocumentName = Annotated[
    str,
    Strict(),
    Field(
        description="The document's name in this memory, such as handbook.md: its extension "
        "gives the format (unless format is given), and the same name again replaces it.",
        min_length=1,
        max_length=200,
    ),
]
DocumentText = Annotated[
    str | None,
    Strict(),
    Field(description="The document as text: Markdown, plain text or HTML.", min_length=1),
]
DocumentBytes = Annotated[
    str | None,
    Strict(),
    Field(
        description="Or the document's bytes in base64: the way to send a PDF (or text saved "
        "as UTF-16 with its byte order mark).",
        min_length=1,
    ),
]
Format = Annotated[
    DocumentFormat | None,
    Field(description="markdown, text, html or pdf, when the name has no such extension."),
]
Title = Annotated[
    str | None,
    Strict(),
    Field(description="Its title (default: its own, or its first heading).", max_length=300),
]
Tag = Annotated[
    str | None,
    Strict(),
    Field(description="A label for the document (1-100 printable characters).", max_length=100),
]
DocumentId = Annotated[
    int, Strict(), Field(description="The id of a listed document.", ge=1, le=2**63 - 1)
]
EpisodeLimit = Annotated[
    int, Strict(), Field(description="How many sessions, newest first.", ge=1, le=MAX_EPISODES)
]


class StrictArguments:
    """Server middleware: a tool call with an argument its tool does not take, or one of the
    wrong type or out of bounds, is a tool error that names it. The SDK would drop an unknown
    argument unread (a model that sent ``namespace`` would take another namespace's answer
    for the one it asked about), and its own refusals quote pydantic's text and the input."""

    def __init__(self, tools: Iterable[Callable[..., Any]]) -> None:
        listed = tuple(tools)
        self.takes = {fn.__name__: frozenset(inspect.signature(fn).parameters) for fn in listed}
        self.checks: dict[str, FuncMetadata] = {fn.__name__: func_metadata(fn) for fn in listed}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        refused = self.refusal(ctx.params) if ctx.method == "tools/call" else None
        if refused is None:
            return await call_next(ctx)
        return CallToolResult(content=[TextContent(type="text", text=refused)], is_error=True)

    def refusal(self, params: Mapping[str, Any] | None) -> str | None:
        """What is wrong with a call's arguments; None: nothing (the SDK answers an unknown
        tool)."""
        name = str((params or {}).get("name"))
        arguments = (params or {}).get("arguments") or {}
        takes = self.takes.get(name)
        if takes is None or not isinstance(arguments, Mapping):
            return None
        unknown = sorted(set(arguments) - takes)
        if unknown:
            message = f"unknown argument(s) {unknown}; {name} takes {sorted(takes)}"
            if "namespace" in unknown:
                message += " (the namespace is the server's: its --namespace, or the key's)"
            return message
        try:
            self.checks[name].validate_arguments(dict(arguments))
        except ValidationError as exc:
            return f"{name}: {problems(exc)}"
        return None


def problems(exc: ValidationError) -> str:
    """Each field's problem, without the value sent or pydantic's documentation links (a rule
    on several arguments together names none)."""
    said = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = printable(".".join(str(part) for part in error["loc"]), 80)
        rule = str(error["msg"]).removeprefix("Value error, ")
        said.append(f"{where}: {rule}" if where else rule)
    return "; ".join(dict.fromkeys(said))
