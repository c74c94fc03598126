"""``archivist tidy``: one run of memory-weekly-tidy, its report printed."""

from __future__ import annotations

from datetime import datetime

import click

from deployments.commands import AS_OF, check_namespace, revealed
from deployments.settings_loader import load_settings


@click.command("tidy")
@click.option(
    "--as-of",
    type=AS_OF,
    help="Run as if it were this time (default now); without an offset, in ARCHIVIST_TIMEZONE.",
)
@click.option("--namespace", callback=check_namespace, help="Only this namespace.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
def tidy_command(as_of: datetime | None, namespace: str | None, *, dry_run: bool) -> None:
    """Run memory-weekly-tidy once: MEMORY.md, the weekly summary, logs to the archive."""
    from deployments.local_prefect import use_prefect

    use_prefect(load_settings())  # bad configuration fails here, before a flow run
    from flows.weekly_tidy import memory_weekly_tidy

    report = memory_weekly_tidy(as_of=as_of, namespace=namespace, dry_run=dry_run)
    click.echo(revealed(report.markdown()))
