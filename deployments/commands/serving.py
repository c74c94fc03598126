"""``archivist api``, ``archivist mcp`` and ``archivist keys``: serving one namespace per
key to assistants over HTTP and MCP. Registered on ``archivist`` in ``deployments/cli.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from deployments.settings_loader import load_settings
from storage.kernel.records import NAMESPACE

if TYPE_CHECKING:
    from sqlalchemy import Engine


@click.command("api")
@click.option("--host", help="Address to listen on [default: ARCHIVIST_SERVING__HOST, 127.0.0.1]")
@click.option("--port", type=click.IntRange(0, 65535), help="[default: 8765]")
@click.option(
    "--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Processes."
)
def api_command(host: str | None, port: int | None, workers: int) -> None:
    """Serve the HTTP API (search, prime, remember, pin, forget); docs at /docs."""
    from serving.api import run

    settings = load_settings()
    where = host or settings.serving.host
    at = settings.serving.api_port if port is None else port
    click.echo(f"Archivist API on http://{where}:{at} (docs at /docs); Ctrl-C stops it", err=True)
    run(settings, host=where, port=at, workers=workers)


@click.command("mcp")
@click.option(
    "--namespace", help="stdio: the namespace served, the key's (ARCHIVIST_SERVING__KEY)."
)
@click.option("--read-only", is_flag=True, help="stdio: search and read only, no writes.")
@click.option("--http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", help="--http: address [default: ARCHIVIST_SERVING__HOST, 127.0.0.1]")
@click.option("--port", type=click.IntRange(0, 65535), help="--http: port [default: 8766]")
def mcp_command(
    namespace: str | None, *, read_only: bool, http: bool, host: str | None, port: int | None
) -> None:
    """Serve one namespace's memory over MCP: tools search_memory, prime_conversation,
    remember, forget_memory, recent_episodes; resources memory://MEMORY.md, memory://daily.

    \b
    stdio (default): the client starts `archivist mcp` with ARCHIVIST_SERVING__KEY, a key
      of the namespace served, in its environment; stdout carries the protocol alone, logs
      go to stderr.
    --http: each request's `Authorization: Bearer <key>` (archivist keys create) picks the
      namespace; no key or a revoked one answers 401.
    """
    from serving.mcp import PATH, serve_http, serve_stdio

    if http and (namespace or read_only):
        raise click.UsageError(
            "over --http the key picks the namespace and mode: drop --namespace and --read-only"
        )
    if not http and (host is not None or port is not None):
        raise click.UsageError("--host and --port go with --http")
    settings = load_settings()
    if http:
        where = host or settings.serving.host
        at = settings.serving.mcp_port if port is None else port
        click.echo(f"Archivist MCP on http://{where}:{at}{PATH}; Ctrl-C stops it", err=True)
        serve_http(settings, host=where, port=at)
        return
    if namespace is not None and not NAMESPACE.fullmatch(namespace):
        raise click.BadParameter(
            f"bad namespace {namespace!r}: lowercase letters, digits, '.', '_', '-'",
            param_hint="--namespace",
        )
    serve_stdio(settings, namespace, read_only=read_only)


@click.group("keys")
def keys_group() -> None:
    """Namespace keys for the HTTP API and the MCP server (stored only as hashes)."""


@keys_group.command("create")
@click.argument("namespace")
@click.option("--read-only", is_flag=True, help="Search and read only: no writes.")
@click.option("--label", help="A name to tell keys apart in `keys list`.")
def keys_create(namespace: str, *, read_only: bool, label: str | None) -> None:
    """Create a key for NAMESPACE and print it once: it is not stored and not shown again."""
    from sqlalchemy.orm import Session

    from storage import audit
    from storage.keys import create_key

    engine = _maintenance_engine()
    with Session(engine) as session, session.begin():
        key_id, key = create_key(session, namespace, read_only=read_only, label=label)
        details = {"read_only": read_only}
        audit.record(
            session,
            "key.create",
            actor="cli",
            namespace=namespace,
            target=f"key:{key_id}",
            details=details,
        )
    click.echo(key)
    mode = "read-only" if read_only else "read-write"
    click.echo(
        f"key {key_id} ({mode}) for {namespace}: copy it now, it is not shown again", err=True
    )


@keys_group.command("list")
@click.option("--namespace", help="Only this namespace's keys.")
def keys_list(namespace: str | None) -> None:
    """Every key's id, namespace, prefix, mode and last use (never the key)."""
    from sqlalchemy.orm import Session

    from storage.keys import list_keys

    with Session(_maintenance_engine()) as session:
        keys = list_keys(session, namespace)
    if not keys:
        click.echo("no keys")
    for k in keys:
        state = f"revoked {k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "active"
        used = f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never"
        mode = "read-only" if k.read_only else "read-write"
        label = f"  {k.label}" if k.label else ""
        click.echo(
            f"{k.id:>5}  {k.namespace}  {k.prefix}…  {mode}  {state}  last used {used}{label}"
        )


@keys_group.command("revoke")
@click.argument("key_id", type=int)
def keys_revoke(key_id: int) -> None:
    """Revoke a key by its id (from `keys list`); its next request answers 401."""
    from sqlalchemy.orm import Session

    from storage import audit
    from storage.kernel.errors import InputError
    from storage.keys import revoke_key

    with Session(_maintenance_engine()) as session, session.begin():
        namespace = revoke_key(session, key_id, datetime.now(UTC))
        if namespace is None:
            raise InputError(f"no key {key_id}; see `archivist keys list`")
        audit.record(
            session, "key.revoke", actor="cli", namespace=namespace, target=f"key:{key_id}"
        )
    click.echo(f"key {key_id} ({namespace}) revoked")


def _maintenance_engine() -> Engine:
    from storage.server.engine import Role, open_store
    from storage.server.migrate import require_current

    settings = load_settings()
    store = open_store(settings, Role.OWNER)
    require_current(store.engine, settings)
    return store.engine


COMMANDS = (api_command, mcp_command, keys_group)
