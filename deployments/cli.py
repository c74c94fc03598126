"""The ``archivist`` command: schema, ingest, sync and the demo."""

from __future__ import annotations

import os
from datetime import datetime

import click
from pydantic import ValidationError

from storage.config import Settings
from storage.errors import ArchivistError


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise click.ClickException(f"bad ARCHIVIST_* configuration:\n{exc}") from exc


class _Group(click.Group):
    """Turns Archivist's own errors into a one-line message and exit code 1."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ArchivistError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=_Group)
def main() -> None:
    """Archivist: the memory lifecycle for AI assistants."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from storage.engine import install_signal_handlers

    install_signal_handlers()


@main.group()
def db() -> None:
    """Schema commands."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the schema (needs pgvector on the server)."""
    from deployments.commands import upgrade_schema

    click.echo(upgrade_schema(_settings()))


@main.command()
@click.argument("url")
def ingest(url: str) -> None:
    """Load JSONL transcripts from URL (a folder, a file, or s3://...) into the store."""
    from deployments.commands import ingest_transcripts

    ingest_transcripts(_settings(), url, click.echo)


@main.command()
@click.option(
    "--as-of",
    type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]),
    help="Run as if it were this time (default now); without an offset, in ARCHIVIST_TIMEZONE.",
)
@click.option("--namespace", help="Only this namespace.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--window-hours", type=float, default=None, help="Look-back window (default 26).")
@click.option("--min-user-messages", type=int, default=None, help="Default 2.")
@click.option("--transcripts", "transcripts_url", help="Load JSONL transcripts from here first.")
def sync(
    as_of: datetime | None,
    namespace: str | None,
    dry_run: bool,
    window_hours: float | None,
    min_user_messages: int | None,
    transcripts_url: str | None,
) -> None:
    """Run memory-sync-daily once and print its report."""
    from deployments.commands import run_sync

    report = run_sync(
        _settings(),
        as_of=as_of,
        namespace=namespace,
        dry_run=dry_run,
        window_hours=window_hours,
        min_user_messages=min_user_messages,
        transcripts_url=transcripts_url,
    )
    click.echo(report.markdown())


@main.command()
@click.option("--days", type=click.IntRange(1, 120), default=21, show_default=True)
def demo(days: int) -> None:
    """Generate sample conversations, load them, and back-fill the daily sync up to today."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from deployments.commands import run_demo

    run_demo(_settings(), days, click.echo)
