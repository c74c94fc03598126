"""The ``archivist`` command: schema, ingest, sync and the demo."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import replace
from datetime import datetime

import click

from deployments import quick_exit
from deployments.cli_errors import Group
from deployments.commands import AS_OF, SearchFlags, budget_option, check_namespace, gathered
from deployments.commands.db import db_group
from deployments.commands.docs import docs_group
from deployments.commands.embedding import reembed_command
from deployments.commands.eval import eval_command
from deployments.commands.ops import prefect_group, serve_command, watchdog_command
from deployments.commands.privacy import COMMANDS as PRIVACY_COMMANDS
from deployments.commands.quality import quality_command
from deployments.commands.serving import COMMANDS as SERVING_COMMANDS
from deployments.commands.status import status_command
from deployments.commands.tidy import tidy_command
from deployments.settings_loader import load_settings
from storage.kernel.settings import Settings


@click.group(cls=Group)
@click.version_option(
    package_name="archivist", prog_name="archivist", message="%(prog)s %(version)s"
)
@click.pass_context
def main(ctx: click.Context) -> None:
    """Archivist: the memory lifecycle for AI assistants."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    if ctx.invoked_subcommand != "serve":  # a one-shot command: its error says it in a line
        os.environ.setdefault(
            "PREFECT_LOGGING_HANDLERS_CONSOLE_CLASS",
            "deployments.cli_logging.ConsoleWithoutTracebacks",
        )
    from storage.server.engine import install_signal_handlers

    install_signal_handlers()
    quick_exit.arm(ctx.invoked_subcommand)


@main.command()
@click.argument("url")
def ingest(url: str) -> None:
    """Load JSONL transcripts from URL (a folder, a file, or s3://...) into the store."""
    from deployments.commands.sync import ingest_transcripts
    from deployments.progress import progress_bars

    settings = load_settings()
    with progress_bars() as bars:
        ingest_transcripts(settings, url, bars)


@main.command()
@click.option(
    "--as-of",
    type=AS_OF,
    help="Run as if it were this time (default now); without an offset, in ARCHIVIST_TIMEZONE.",
)
@click.option("--namespace", callback=check_namespace, help="Only this namespace.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--window-hours", type=float, default=None, help="Look-back window (default 26).")
@click.option("--min-user-messages", type=int, default=None, help="Default 2.")
@click.option("--transcripts", "transcripts_url", help="Load JSONL transcripts from here first.")
def sync(
    as_of: datetime | None,
    namespace: str | None,
    *,
    dry_run: bool,
    window_hours: float | None,
    min_user_messages: int | None,
    transcripts_url: str | None,
) -> None:
    """Run memory-sync-daily once and print its report."""
    from deployments.commands.inputs import check_transcripts
    from deployments.local_prefect import use_prefect
    from deployments.progress import progress_bars

    settings = load_settings()
    if transcripts_url is not None:
        check_transcripts(settings, transcripts_url)  # before a flow run that would fail
    use_prefect(settings)
    with progress_bars() as bars, bars.following_runs():
        from deployments.commands.sync import run_sync  # Prefect: after following_runs

        report = run_sync(
            settings,
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
    # A quiet terminal, yet every flow run's INFO logs reach the API and its UI.
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    from deployments.local_prefect import use_prefect
    from deployments.progress import progress_bars

    settings = load_settings()
    use_prefect(settings)
    with progress_bars() as bars, bars.following_runs():
        from deployments.commands.sync import run_demo  # Prefect: after following_runs

        run_demo(settings, days, bars, command=invoked_as())


def invoked_as() -> str:
    """How to type ``archivist`` again: so when it is on PATH, else the path it was run by
    (``.venv/bin/archivist`` right after the README's first command)."""
    typed = sys.argv[0]
    if os.path.basename(typed) != "archivist":
        return "archivist"  # not the console script (python -m, a test's runner)
    found = shutil.which("archivist")
    if found is not None and os.path.realpath(found) == os.path.realpath(typed):
        return "archivist"
    return shlex.quote(typed)


_TIME_RANGES = ["today", "week", "month", "recent", "all"]


@main.command()
@click.argument("namespace")
@click.argument("query")
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=10,
    show_default=True,
    help="Results; at most ARCHIVIST_RETRIEVAL__MAX_LIMIT (100 unless set).",
)
@click.option("--time-range", type=click.Choice(_TIME_RANGES), default=None)
@click.option("--kind", "kinds", multiple=True, help="Only these kinds (repeatable).")
@click.option("--preset", type=click.Choice(["archivist", "librarian"]), default=None)
@click.option("--weights", help="Custom weights, e.g. semantic=0.7,recency=0.3.")
@click.option("--as-of", type=AS_OF, default=None)
@click.option("--explain", is_flag=True, help="Show each factor of each score.")
@click.option("--no-record", is_flag=True, help="Do not count this search as an access.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as one JSON document.")
@click.option("--full", is_flag=True, help="Show each whole memory, not the passage that answers.")
@budget_option("Fit the best passages into N tokens, each once, with citations (--limit: no).")
@gathered(SearchFlags, "flags")
def search(namespace: str, query: str, *, flags: SearchFlags) -> None:
    """Search NAMESPACE's memories for QUERY; each hit shows the passage that answers."""
    from deployments.commands.retrieval import namespace_hint, search_and_show

    settings = load_settings()
    flags = replace(flags, as_of=_localize(flags.as_of, settings))
    hits = search_and_show(settings, namespace, query, flags, click.echo)
    hint = None if hits else namespace_hint(settings, namespace)
    if hint is not None:
        click.echo(f"note: {hint}", err=True)


@main.command()
@click.argument("namespace")
@click.argument("message", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the parts and the text as JSON.")
@budget_option("Keep the text within N tokens: facts first, then conversations, threads, names.")
def prime(namespace: str, message: str | None, *, as_json: bool, budget_tokens: int | None) -> None:
    """Print what the assistant should remember when NAMESPACE starts a conversation."""
    from deployments.commands.retrieval import run_prime

    run_prime(
        load_settings(), namespace, message, click.echo, as_document=as_json, budget=budget_tokens
    )


@main.command()
@click.option(
    "--min-rows",
    type=click.IntRange(100),
    default=None,
    help="Namespace size that gets the HNSW index (default from settings).",
)
def index(min_rows: int | None) -> None:
    """Move large namespaces' memories into the HNSW index (fast search at scale)."""
    from deployments.commands.retrieval import run_index
    from deployments.progress import progress_bars

    settings = load_settings()
    with progress_bars() as bars:
        run_index(settings, min_rows, bars)


def _localize(moment: datetime | None, settings: Settings) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=settings.tz)


_OPS = [
    "ADD_MEMORY",
    "RECORD_MESSAGE",
    "SAVE_PREFERENCE",
    "UPDATE_GOAL",
    "FORGET_MEMORY",
    "ADD_DOCUMENT",
]


@main.command()
@click.argument("namespace")
@click.argument("op", type=click.Choice(_OPS))
@click.option("--payload", required=True, help='The operation\'s JSON, e.g. {"content": "..."}.')
@click.option("--key", help="Idempotency key: the same key again gives the same item.")
def enqueue(namespace: str, op: str, payload: str, key: str | None) -> None:
    """Queue one write (validated now, executed by a drain or the worker)."""
    from deployments.commands.queue import enqueue_item

    enqueue_item(load_settings(), namespace, op, payload, key, click.echo)


@main.group("queue")
def queue_group() -> None:
    """Write queue commands."""


@queue_group.command("stats")
def queue_stats() -> None:
    """Counts per status, the oldest wait, and dead items with their errors."""
    from deployments.commands.queue import show_stats

    show_stats(load_settings(), click.echo)


@queue_group.command("drain")
@click.option("--as-of", type=AS_OF, default=None)
@click.option("--max-batches", type=click.IntRange(1, 100_000), default=50, show_default=True)
def queue_drain(as_of: datetime | None, max_batches: int) -> None:
    """Run memory-queue-drain once and print its report."""
    from deployments.local_prefect import use_prefect

    settings = load_settings()
    use_prefect(settings)
    from deployments.commands.queue import run_drain  # Prefect: after its API is chosen

    click.echo(run_drain(settings, as_of, max_batches).markdown())


@main.command()
@click.option("--once", is_flag=True, help="Drain what is due, then exit.")
def worker(*, once: bool) -> None:
    """Drain the queue continuously with low latency (no Prefect); Ctrl-C stops it."""
    from deployments.commands.queue import work

    work(load_settings(), once=once, echo=click.echo)


for _command in (
    db_group,
    docs_group,
    eval_command,
    reembed_command,
    status_command,
    quality_command,
    tidy_command,
    serve_command,
    prefect_group,
    watchdog_command,
    *PRIVACY_COMMANDS,
    *SERVING_COMMANDS,
):
    main.add_command(_command)
