"""``archivist quality``: one run of ``memory-quality-report``, its report printed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import click

from deployments.commands import AS_OF
from deployments.settings_loader import load_settings
from storage.kernel.settings import Settings


def run_quality_report(
    settings: Settings, as_of: datetime | None, echo: Callable[[str], None]
) -> None:
    """One run of memory-quality-report; a critical failure raises DataQualityError."""
    from flows.quality_report import memory_quality_report

    if as_of is not None and as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=settings.tz)
    echo(memory_quality_report(as_of=as_of).markdown())


@click.command("quality")
@click.option(
    "--as-of",
    type=AS_OF,
    default=None,
    help="Reference time (default now); without an offset, in ARCHIVIST_TIMEZONE.",
)
def quality_command(as_of: datetime | None) -> None:
    """Run memory-quality-report once; exits 1 when a critical expectation fails."""
    from deployments.local_prefect import use_prefect

    settings = load_settings()
    use_prefect(settings)
    run_quality_report(settings, as_of, click.echo)
