"""The MCP server's tools and resources: thin calls into ``MemoryService`` for the grant of
the message being handled (``serving._mcp_grant``). The namespace is never an argument.

``search_memory`` and ``prime_conversation`` answer twice over: the data (each hit with its
label, ``[Memory 1]``, and a ``sources`` line) as structured content, and the labelled lines
and ``Sources:`` as the text a model reads. Labels start from 1 on each call: the SDK keeps
per-connection state (``Connection.state``) but offers tools no public way to it, and on the
2026 protocol's stateless HTTP every call is a connection of its own.

Every refusal the service raises (bad input, an unknown id, another namespace's id, which
row-level security makes simply unknown, a read-only key's write) comes back as a tool error
carrying its message: ``isError`` and the text, never a traceback. A server error (the store
failing, a bug) is a tool error with a fixed message, as the HTTP API answers it; its detail
goes to the server's log (``serving._errors.error_reply``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from serving._api_models import DocumentRequest, SearchRequest, TimeRangeName
from serving._errors import error_reply
from serving._mcp_args import (
    Budget,
    Content,
    DocumentBytes,
    DocumentId,
    DocumentName,
    DocumentText,
    End,
    EpisodeLimit,
    FirstMessage,
    Format,
    IdempotencyKey,
    Importance,
    Kind,
    Kinds,
    Limit,
    MemoryId,
    Occurred,
    Query,
    Range,
    Start,
    Tag,
    Title,
    problems,
)
from serving._mcp_grant import current_grant
from serving._service import MemoryService
from serving._views import context_view, search_view
from storage.retrieval import render_citations

DAILY_DAYS = 7

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)
DELETES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)

# Structured content a dict (the published output schema, as before), text of our own.
Answer = Annotated[CallToolResult, dict[str, Any]]
Body = TypeVar("Body", bound=BaseModel)


@contextmanager
def refusals_as(error: type[Exception]) -> Iterator[None]:
    """The service's refusals as the SDK's anticipated errors, message kept; a server error
    as one with the API's fixed message (its detail logged)."""
    try:
        yield
    except Exception as exc:  # the protocol's boundary: every error becomes a tool error
        raise error(error_reply(exc)[1]) from exc


class MemoryTools:
    """The tools, as methods: the SDK reads each one's name, docstring and typed arguments."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    def search_memory(
        self,
        query: Query,
        limit: Limit = 10,
        time_range: Range = None,
        start: Start = None,
        end: End = None,
        kinds: Kinds = None,
        budget_tokens: Budget = None,
    ) -> Answer:
        """Search this user's long-term memory and documents. Each hit carries a label such as
        [Memory 1] or [Doc 1], the passage of its memory that answers ("passage") and the whole
        memory ("content"); a memory hit its memory_id, the session and message ids it came
        from and when it happened, a document hit (kind "doc") its "doc": document, title,
        source, heading and span. With budget_tokens, the best passages that fit that many
        tokens, and tokens_used. Cite hits by label and close the answer with the "Sources:"
        line."""
        request = _search_request(query, limit, time_range, start, end, kinds, budget_tokens)
        with refusals_as(ToolError):
            grant = current_grant()
            if request.budget_tokens is not None:
                context = self.service.search_within(grant, request, request.budget_tokens)
                view = context_view(grant.namespace, context)
                used = f"({context.tokens_used} of {context.budget_tokens} tokens)"
                return _answer(f"{context.text or 'no passage fits'}\n\n{used}", view)
            cited = self.service.search(
                grant,
                request.query,
                limit=request.limit,
                time_range=request.resolved_time_range(),
                kinds=request.kinds,
            )
        text = render_citations(cited) or "no memories found"
        return _answer(text, search_view(grant.namespace, cited))

    def prime_conversation(
        self, first_message: FirstMessage = None, budget_tokens: Budget = None
    ) -> Answer:
        """What to remember as a conversation starts: recent episodes, open threads and the facts
        that matter, labelled [Memory n], as data (with provenance) and as ready text
        ("formatted", closed by a "Sources:" line); within budget_tokens tokens when given
        (tokens_used says how many it took)."""
        with refusals_as(ToolError):
            primed = self.service.prime(current_grant(), first_message, budget_tokens)
        return _answer(primed["formatted"], primed)

    def remember(
        self,
        content: Content,
        kind: Kind = "note",
        importance: Importance = None,
        occurred_at: Occurred = None,
        idempotency_key: IdempotencyKey = None,
    ) -> dict[str, Any]:
        """Store a memory now, through the durable write queue: it is searchable as soon as the
        worker has embedded it (well under a second while `archivist worker` runs).
        occurred_at: when it happened, if not now."""
        with refusals_as(ToolError):
            return self.service.remember(
                current_grant(),
                content,
                kind=kind,
                importance=importance,
                occurred_at=occurred_at,
                idempotency_key=idempotency_key,
            )

    def forget_memory(self, memory_id: MemoryId) -> dict[str, Any]:
        """Delete one memory for good (a chat turn's sibling chunks with it)."""
        with refusals_as(ToolError):
            return self.service.forget(current_grant(), memory_id)

    def add_document(
        self,
        name: DocumentName,
        text: DocumentText = None,
        content_base64: DocumentBytes = None,
        format: Format = None,
        title: Title = None,
        tag: Tag = None,
        idempotency_key: IdempotencyKey = None,
    ) -> dict[str, Any]:
        """Add a document to this user's knowledge (a handbook, notes, a manual, a web page):
        Markdown, plain text or HTML as text, or any of them or a PDF as content_base64. The
        durable write queue takes it; once the worker has chunked and embedded it,
        search_memory finds its chunks (kind "doc", labelled [Doc n]). The same name again
        replaces it; list_documents shows it when stored."""
        fields = {"name": name, "text": text, "content_base64": content_base64}
        fields |= {"format": format, "title": title, "tag": tag}
        request = _valid(DocumentRequest, fields | {"idempotency_key": idempotency_key})
        with refusals_as(ToolError):
            return self.service.documents.add(
                current_grant(), request, idempotency_key=idempotency_key
            )

    def list_documents(self) -> dict[str, Any]:
        """The documents of this memory: id, name (as added), source, title, tag, format,
        size and chunk count."""
        with refusals_as(ToolError):
            grant = current_grant()
            documents = self.service.documents.listed(grant)
        return {"namespace": grant.namespace, "documents": documents}

    def delete_document(self, document_id: DocumentId) -> dict[str, Any]:
        """Delete one document for good, with its chunks."""
        with refusals_as(ToolError):
            return self.service.documents.delete(current_grant(), document_id)

    def recent_episodes(self, limit: EpisodeLimit = 5) -> dict[str, Any]:
        """Summaries of the latest conversations, newest first."""
        with refusals_as(ToolError):
            grant = current_grant()
            episodes = self.service.recent_episodes(grant, limit)
        return {"namespace": grant.namespace, "episodes": episodes}

    def tools(self) -> tuple[tuple[Callable[..., Any], ToolAnnotations], ...]:
        """The methods that are tools, each with its annotations (``register``, and the
        arguments ``StrictArguments`` lets through)."""
        return (
            (self.search_memory, READS),
            (self.prime_conversation, READS),
            (self.remember, WRITES),
            (self.forget_memory, DELETES),
            (self.recent_episodes, READS),
            (self.add_document, WRITES),
            (self.list_documents, READS),
            (self.delete_document, DELETES),
        )

    def memory_md(self) -> str:
        with refusals_as(ResourceError):
            return self.service.memory_md(current_grant())

    def daily_logs(self) -> str:
        with refusals_as(ResourceError):
            logs = self.service.daily_logs(current_grant(), DAILY_DAYS)
        return "\n\n".join(f"<!-- memory/{name} -->\n{body}" for name, body in logs.items())


def register(server: MCPServer, tools: MemoryTools) -> None:
    """Add the eight tools and two resources to ``server``."""
    for tool, hints in tools.tools():
        server.add_tool(tool, annotations=hints)
    server.resource(
        "memory://MEMORY.md",
        name="MEMORY.md",
        description="The long-term memory file, kept by the weekly tidy (empty before it).",
        mime_type="text/markdown",
    )(tools.memory_md)
    server.resource(
        "memory://daily",
        name="daily logs",
        description=f"The last {DAILY_DAYS} daily memory logs, newest first, each headed by "
        "its file name.",
        mime_type="text/markdown",
    )(tools.daily_logs)


def _answer(text: str, data: dict[str, Any]) -> CallToolResult:
    """``text`` for the model to read, ``data`` as the structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _search_request(
    query: str,
    limit: int,
    time_range: TimeRangeName | None,
    start: Any,
    end: Any,
    kinds: list[str] | None,
    budget_tokens: int | None = None,
) -> SearchRequest:
    """The API's search body, for its rules on start, end and time_range together."""
    fields = {"query": query, "limit": limit, "time_range": time_range, "kinds": kinds}
    return _valid(
        SearchRequest, fields | {"start": start, "end": end, "budget_tokens": budget_tokens}
    )


def _valid(model: type[Body], fields: dict[str, Any]) -> Body:
    """The API's body of these arguments, for its rules on them together; a ``ToolError``
    naming each problem otherwise (arguments left out are the body's defaults)."""
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise ToolError(problems(exc)) from exc
