"""Operations commands: ``archivist serve`` and ``archivist watchdog``.

Registered on the ``archivist`` group in ``deployments/cli.py``.
"""

from __future__ import annotations

from datetime import datetime

import click

from deployments.commands import AS_OF
from deployments.settings_loader import load_settings


@click.command("serve")
@click.option("--limit", type=click.IntRange(1), default=None, help="Most flow runs at once.")
@click.option(
    "--replace",
    is_flag=True,
    help="Delete the deployments `prefect deploy` made with the same names, then serve.",
)
@click.option(
    "--remove",
    is_flag=True,
    help="Delete the deployments `archivist serve` made (for `prefect deploy`), then exit.",
)
def serve_command(limit: int | None, *, replace: bool, remove: bool) -> None:
    """Serve every Archivist deployment on its schedule from this process (Ctrl-C stops).

    It never takes over the deployments `prefect deploy` made with the same names: it
    refuses, or with --replace deletes them first."""
    from deployments.local_prefect import use_prefect

    if replace and remove:
        raise click.UsageError("--replace serves, --remove deletes: give one of them")
    settings = load_settings()
    use_prefect(settings)
    from deployments.serve import remove_served, serve_all  # Prefect: after its API is chosen

    if remove:
        click.echo(remove_served())
        return
    serve_all(settings, limit, replace=replace)


@click.command("watchdog")
@click.option(
    "--as-of",
    type=AS_OF,
    help="Check as if it were this time (default now); without an offset, in ARCHIVIST_TIMEZONE.",
)
@click.option("--dry-run", is_flag=True, help="Check and report; send and remember nothing.")
@click.option("--deployment", "names", multiple=True, help="Only this deployment (repeatable).")
def watchdog_command(as_of: datetime | None, *, dry_run: bool, names: tuple[str, ...]) -> None:
    """Run memory-cron-watchdog once and print its report."""
    from deployments.local_prefect import use_prefect

    use_prefect(load_settings())  # bad configuration fails here, before a flow run
    from flows.watchdog import memory_cron_watchdog

    report = memory_cron_watchdog(as_of=as_of, dry_run=dry_run, deployments=list(names) or None)
    click.echo(report.markdown())


@click.group("prefect")
def prefect_group() -> None:
    """The local Prefect server that flow commands start and keep (when PREFECT_API_URL
    chooses none)."""


@prefect_group.command("start")
def prefect_start() -> None:
    """Start the local Prefect server now (flow commands start it when they need it)."""
    from deployments.local_prefect import use_prefect

    url = use_prefect(load_settings())
    click.echo(f"Prefect API at {url}; its UI at {url.removesuffix('/api')}")


@prefect_group.command("stop")
def prefect_stop() -> None:
    """Stop the local Prefect server that a flow command started."""
    from deployments.local_prefect import stop_server

    click.echo(stop_server())
