"""Which grant an MCP message runs under: one bound by configuration (stdio), or the one of
the key presented with the HTTP request that carried the message.

Over streamable HTTP the SDK's bearer middleware asks ``KeyVerifier`` about every request's
``Authorization: Bearer <key>``: no key, or an unknown or revoked one, answers 401 before
any MCP message is read. The grant travels on the request (``scope["user"]``), which the
SDK attaches to each message it hands the server; ``BindGrant`` reads it there for every
message and sets it for that message's handler alone. It never comes from a context
variable set when the session began: a stateful session serves all its messages in one
task, started by its first request.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from serving._errors import Unauthorized
from serving._service import MemoryService
from storage.keys import Grant, key_hash

GrantOf = Callable[[ServerRequestContext[Any, Any]], Grant | None]

_current: ContextVar[Grant | None] = ContextVar("archivist_mcp_grant", default=None)


class KeyToken(AccessToken):
    """A valid key's access: its grant, and its hash in place of the key."""

    grant: Grant


class KeyVerifier:
    """The SDK's ``TokenVerifier`` over ``MemoryService.authenticate``: the API's keys."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            grant = await anyio.to_thread.run_sync(self.service.authenticate, token)
        except Unauthorized:
            return None
        scopes = ["read"] if grant.read_only else ["read", "write"]
        # client_id names the key: the SDK binds a session to it, so another key cannot
        # use the session (it answers 404 as if the session did not exist).
        return KeyToken(token=key_hash(token), client_id=grant.actor, scopes=scopes, grant=grant)


def bound(grant: Grant) -> GrantOf:
    """Every message runs under ``grant`` (stdio: one process, one namespace)."""
    return lambda _ctx: grant


def by_key(ctx: ServerRequestContext[Any, Any]) -> Grant | None:
    """The grant of the key on the HTTP request that carried this message."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if isinstance(user, AuthenticatedUser) and isinstance(user.access_token, KeyToken):
        return user.access_token.grant
    return None


class BindGrant:
    """Server middleware: set the message's grant for its handler, and only for it."""

    def __init__(self, grant_of: GrantOf) -> None:
        self.grant_of = grant_of

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        token = _current.set(self.grant_of(ctx))
        try:
            return await call_next(ctx)
        finally:
            _current.reset(token)


def current_grant() -> Grant:
    """The grant of the message being handled; ``Unauthorized`` if none is bound."""
    grant = _current.get()
    if grant is None:
        raise Unauthorized(
            "no namespace is bound to this request: send Authorization: Bearer <key>"
        )
    return grant
