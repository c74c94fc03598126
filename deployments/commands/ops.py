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
def serve_command(limit: int | None) -> None:
    """Serve every Archivist deployment on its schedule from this process (Ctrl-C stops)."""
    from deployments.serve import serve_all

    serve_all(load_settings(), limit)


@click.command("watchdog")
@click.option(
    "--as-of",
    type=AS_OF,
    help="Check as if it were this time (default now); without an offset, in ARCHIVIST_TIMEZONE.",
)
@click.option("--dry-run", is_flag=True, help="Check and report; send and remember nothing.")
@click.option("--deployment", "names", multiple=True, help="Only this deployment (repeatable).")
def watchdog_command(as_of: datetime | None, dry_run: bool, names: tuple[str, ...]) -> None:
    """Run memory-cron-watchdog once and print its report."""
    from flows.watchdog import memory_cron_watchdog

    load_settings()  # fail on bad configuration before starting a flow run
    report = memory_cron_watchdog(as_of=as_of, dry_run=dry_run, deployments=list(names) or None)
    click.echo(report.markdown())
