"""``archivist mcp``: one namespace's memory for assistants, over the Model Context Protocol
(the official SDK's ``MCPServer``).

Tools: ``search_memory``, ``prime_conversation``, ``remember``, ``forget_memory``,
``recent_episodes``, and the documents' ``add_document`` (through the write queue),
``list_documents`` and ``delete_document``. Resources: ``memory://MEMORY.md`` and
``memory://daily`` (the last seven daily logs). Hits carry a label (``[Memory 1]``) and
their provenance (memory id, session, message ids, time), closed by a ``Sources:`` line.

The namespace is never an argument a model could change. Over stdio it is bound by the
key in ``ARCHIVIST_SERVING__KEY`` (``archivist mcp [--namespace NS] [--read-only]``: the
namespace, if given, must be the key's; ``--read-only`` narrows a key that may write);
without row-level security, by ``--namespace`` alone. Over streamable HTTP
(``--http``, at ``/mcp``) by the key each request presents as ``Authorization: Bearer
<key>`` (``archivist keys create``, the HTTP API's keys): no key or a revoked one answers
401, and a read-only key's write (``remember``, ``forget_memory``, ``add_document``,
``delete_document``) is a tool error. Over HTTP it keeps no sessions (``serve_http``), and
takes request bodies as large as adding a document at its cap needs.
"""

from __future__ import annotations

import sys
from contextlib import redirect_stdout
from dataclasses import replace

from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from serving._body_limit import document_body_bytes
from serving._mcp_args import StrictArguments
from serving._mcp_grant import BindGrant, GrantOf, KeyVerifier, bound, by_key
from serving._mcp_tools import MemoryTools, register
from serving._service import MemoryService
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import Settings
from storage.keys import Grant

NAME = "archivist"
PATH = "/mcp"
INSTRUCTIONS = (
    "Archivist is this user's long-term memory. Call prime_conversation when a conversation "
    "starts, search_memory whenever earlier context would help (cite hits by their label, "
    "such as [Memory 1], and close with the Sources: line), "
    "and remember what is worth keeping. Documents the user hands you to keep (a handbook, "
    "notes) go in with add_document and are searched with the memories."
)


def build_server(
    service: MemoryService, grant_of: GrantOf, *, issuer: str | None = None
) -> MCPServer:
    """The server over ``service``; ``issuer`` (the server's own URL) turns on bearer keys."""
    keys = issuer is not None
    tools = MemoryTools(service)
    server: MCPServer = MCPServer(
        NAME,
        instructions=INSTRUCTIONS,
        token_verifier=KeyVerifier(service) if keys else None,
        # Keys are Archivist's own (archivist keys create), not OAuth: no metadata routes.
        auth=AuthSettings(issuer_url=issuer, resource_server_url=None) if keys else None,
        middleware=[BindGrant(grant_of), StrictArguments(tool for tool, _ in tools.tools())],
        log_level="WARNING",
    )
    register(server, tools)
    return server


def serve_stdio(settings: Settings, namespace: str | None, *, read_only: bool) -> None:
    """Serve one namespace over stdin and stdout until the client closes them: the
    namespace of the configured key (``stdio_grant``)."""
    with redirect_stdout(sys.stderr):  # stdout carries the protocol alone
        service = MemoryService.open(settings)
    grant = stdio_grant(service, namespace, read_only=read_only)
    build_server(service, bound(grant)).run("stdio")


def stdio_grant(service: MemoryService, namespace: str | None, *, read_only: bool) -> Grant:
    """The grant a stdio server serves under: its key's (``ARCHIVIST_SERVING__KEY``), read
    only if asked; without row-level security and a key, ``namespace`` as configured."""
    serving = service.settings.serving
    if serving.key is None:
        if serving.row_level_security:
            raise ConfigurationError(
                "archivist mcp over stdio serves the namespace of a key: set "
                "ARCHIVIST_SERVING__KEY to a key of it (archivist keys create NAMESPACE)"
            )
        if namespace is None:
            raise ConfigurationError("stdio serves one namespace: give --namespace NS")
        return Grant(key_id=None, namespace=namespace, read_only=read_only)
    grant = service.authenticate(serving.key.get_secret_value())
    if namespace is not None and namespace != grant.namespace:
        raise ConfigurationError(
            f"ARCHIVIST_SERVING__KEY is a key of another namespace than {namespace!r}"
        )
    if read_only and not grant.read_only:
        return replace(grant, read_only=True, narrowed=True)
    return grant


def serve_http(settings: Settings, *, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp``, one namespace per key.

    Stateless: each request is served on its own, under the grant of the key it carries,
    and no session outlives it. Nothing here needs a session (no tool asks the client
    anything, and the key picks the namespace on every request anyway), while the SDK's
    sessions were one global pool (10,000, idle for 30 minutes) that a single key could
    fill, locking every other namespace out until they expired."""
    service = MemoryService.open(settings)
    server = build_server(service, by_key, issuer=f"http://{host}:{port}")
    server.run(
        "streamable-http",
        host=host,
        port=port,
        streamable_http_path=PATH,
        stateless_http=True,
        max_request_body_size=document_body_bytes(settings),
    )
