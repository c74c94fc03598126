"""The CLI's ageing and privacy commands: ``aging``, ``forget``, ``pin``, ``unpin``,
``purge --session``, ``restore``. Added to ``archivist`` by ``deployments.cli``."""

from __future__ import annotations

import getpass
from datetime import datetime
from typing import TYPE_CHECKING

import click

from deployments.commands import AS_OF, check_namespace, revealed
from deployments.settings_loader import load_settings
from storage.kernel.settings import Settings

if TYPE_CHECKING:
    from storage.embedding import Embedder
    from storage.server.engine import Store
    from tasks.aging import ColdStore
    from tasks.files import MemoryRoot


def _actor() -> str:
    return f"cli:{getpass.getuser()}"


def _open(settings: Settings) -> tuple[Store, ColdStore, MemoryRoot]:
    """The checked store, the cold tier and the memory files."""
    store, cold, root, _ = _open_with_embedder(settings)
    return store, cold, root


def _open_with_embedder(settings: Settings) -> tuple[Store, ColdStore, MemoryRoot, Embedder]:
    """``_open`` and the store's embedder, for restores (which re-embed another model's rows)."""
    from storage.server.connect import connect
    from tasks.aging import open_cold_store
    from tasks.files import open_memory_root

    store, embedder = connect(settings)
    return store, open_cold_store(settings), open_memory_root(settings), embedder


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--shard`` checked before anything starts: ``i/n``, as the flow reads it."""
    from storage.kernel.shards import Shard

    try:
        return None if value is None else str(Shard.parse(value))
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


@click.command("aging")
@click.option("--as-of", type=AS_OF, default=None)
@click.option("--namespace", callback=check_namespace, help="Only this namespace.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option(
    "--shard",
    metavar="I/N",
    callback=_shard,
    help="Only the namespaces of shard I of N (split by namespace hash), e.g. 2/4.",
)
def aging_command(
    as_of: datetime | None, namespace: str | None, *, dry_run: bool, shard: str | None
) -> None:
    """Run memory-aging once: decay, compress, archive, delete (when enabled), access log."""
    from deployments.local_prefect import use_prefect
    from deployments.progress import progress_bars

    settings = load_settings()
    if as_of is not None and as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=settings.tz)
    use_prefect(settings)
    with progress_bars() as bars, bars.following_runs():
        from flows.aging import memory_aging  # Prefect: after following_runs

        report = memory_aging(as_of=as_of, namespace=namespace, dry_run=dry_run, shard=shard)
    click.echo(revealed(report.markdown()))


@click.command("forget")
@click.argument("namespace")
@click.option("--confirm", is_flag=True, help="Required: erasure cannot be undone.")
@click.option("--export", "export_to", help="Export a bundle to this fsspec URL first.")
@click.option(
    "--full-vacuum",
    is_flag=True,
    help="VACUUM FULL every table that can hold a namespace's rows, and pg_statistic: "
    "rewrites them, locking each while it runs.",
)
def forget_command(
    namespace: str, *, confirm: bool, export_to: str | None, full_vacuum: bool
) -> None:
    """Erase everything of NAMESPACE: rows, vectors, files, cold tier; one audit entry."""
    if not confirm:
        raise click.UsageError(f"forgetting {namespace!r} cannot be undone: add --confirm")
    from tasks.privacy import Export, forget

    settings = load_settings()
    store, cold, root = _open(settings)
    export = None if export_to is None else Export(export_to, settings.storage_options)
    out = forget(
        store.engine, cold, root, namespace, actor=_actor(), export=export, full_vacuum=full_vacuum
    )
    if out.exported is not None:
        click.echo(f"exported to {export_to}: {out.exported}")
    rows = ", ".join(f"{table} {n}" for table, n in out.rows.items() if n)
    click.echo(
        f"forgot {namespace}: {rows or 'no rows'}; {out.cold_files} cold files, "
        f"{out.memory_files} memory files; vacuumed {len(out.vacuumed)} tables"
        + (" (full)" if full_vacuum and out.vacuumed else "")
    )


def _pin(memory_id: int, *, pinned: bool) -> None:
    from tasks.privacy import set_pin

    store, cold, _, embedder = _open_with_embedder(load_settings())
    namespace = set_pin(
        store.engine, cold, memory_id, pinned=pinned, embedder=embedder, actor=_actor()
    )
    click.echo(f"memory {memory_id} ({namespace}) {'pinned' if pinned else 'unpinned'}")


@click.command("pin")
@click.argument("memory_id", type=int)
def pin_command(memory_id: int) -> None:
    """Pin a memory: it never decays, compresses, archives or is deleted."""
    _pin(memory_id, pinned=True)


@click.command("unpin")
@click.argument("memory_id", type=int)
def unpin_command(memory_id: int) -> None:
    """Let a pinned memory age again."""
    _pin(memory_id, pinned=False)


@click.command("purge")
@click.option("--session", "session_id", required=True, help="The session to erase.")
@click.option("--confirm", is_flag=True, help="Required: erasure cannot be undone.")
@click.option(
    "--full-vacuum",
    is_flag=True,
    help="VACUUM FULL every table that can hold a namespace's rows, and pg_statistic: "
    "rewrites them, locking each while it runs.",
)
def purge_command(session_id: str, *, confirm: bool, full_vacuum: bool) -> None:
    """Erase one session and all derived from it (memories, episode, blocks, transcript)."""
    if not confirm:
        raise click.UsageError(f"purging session {session_id!r} cannot be undone: add --confirm")
    from tasks.privacy import purge_session

    store, cold, root = _open(load_settings())
    counts = purge_session(
        store.engine, cold, root, session_id, actor=_actor(), full_vacuum=full_vacuum
    )
    click.echo(f"purged {session_id}: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))


@click.command("restore")
@click.argument("memory_id", type=int)
def restore_command(memory_id: int) -> None:
    """Bring an archived memory back to the hot table."""
    from tasks.privacy import restore

    store, cold, _, embedder = _open_with_embedder(load_settings())
    restore(store.engine, cold, memory_id, embedder, actor=_actor())
    click.echo(f"memory {memory_id} restored")


COMMANDS = (
    aging_command,
    forget_command,
    pin_command,
    unpin_command,
    purge_command,
    restore_command,
)
