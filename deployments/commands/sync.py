"""What the CLI commands do, as plain functions that take settings and a printer."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING

import fsspec

from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tasks.sync import IngestReport, JsonlTranscripts, SyncReport, ingest

if TYPE_CHECKING:
    from deployments.progress import Bars

# Labels of the bars these commands draw (``deployments.progress``).
FILES = "transcript files"
DAYS = "days back-filled"


def ingest_transcripts(settings: Settings, url: str, bars: Bars) -> IngestReport:
    """Load transcripts and print counts and every problem."""
    from deployments.commands.inputs import check_transcripts
    from storage.server.migrate import require_current

    echo = bars.echo
    check_transcripts(settings, url)
    store = open_store(settings)
    require_current(store.engine, settings)
    fs, root = fsspec.core.url_to_fs(url, **settings.storage_options)
    source = JsonlTranscripts(fs, root)
    total = len(source.files())
    if total == 0:
        echo(f"no *.jsonl files under {url}")
    report = ingest(
        store.engine,
        source,
        on_batch=lambda r: bars.update(
            FILES,
            r.files,
            total,
            line=f"  loaded {r.sessions}/{total} files, {r.messages} messages",
        ),
    )
    bars.update(FILES, total, total)  # every file read, the bad ones too
    for problem in report.problems:
        echo(f"  bad input: {problem}")
    echo(
        f"ingested {counted(report.sessions, 'session')}, {counted(report.messages, 'message')} "
        f"from {counted(report.files, 'file')}; {counted(len(report.problems), 'problem')}, "
        f"{counted(report.empty_content, 'empty message')}"
    )
    return report


def run_sync(
    settings: Settings,
    *,
    as_of: datetime | None,
    namespace: str | None,
    dry_run: bool,
    window_hours: float | None,
    min_user_messages: int | None,
    transcripts_url: str | None,
) -> SyncReport:
    """One run of the daily sync flow."""
    from flows.daily_sync import memory_sync_daily

    return memory_sync_daily(
        as_of=as_of,
        window_hours=window_hours or settings.sync.window_hours,
        min_user_messages=(
            settings.sync.min_user_messages if min_user_messages is None else min_user_messages
        ),
        namespace=namespace,
        dry_run=dry_run,
        transcripts_url=transcripts_url,
    )


def demo_days(settings: Settings, days: int, now: datetime) -> list[datetime]:
    """The 23:00 sync times to back-fill: the last ``days`` ones that have passed."""
    local = now.astimezone(settings.tz)
    last: date = local.date() if local.time() >= time(23) else local.date() - timedelta(days=1)
    return [
        datetime.combine(last - timedelta(days=n), time(23), tzinfo=settings.tz)
        for n in range(days - 1, -1, -1)
    ]


def counted(n: int, thing: str, things: str | None = None) -> str:
    """``1 session``, ``2 sessions`` (``things``: a plural that is not ``thing`` + s)."""
    return f"{n} {thing}" if n == 1 else f"{n} {things or thing + 's'}"


def run_demo(
    settings: Settings,
    days: int,
    bars: Bars,
    now: datetime | None = None,
    command: str = "archivist",
) -> None:
    """Sample data in, daily sync back-filled day by day, and where to look; ``command`` is
    how the user types ``archivist`` (``.venv/bin/archivist`` when it is not on PATH)."""
    from deployments.commands.db import upgrade_schema
    from flows.daily_sync import memory_sync_daily
    from flows.weekly_tidy import memory_weekly_tidy
    from storage.embedding import preload_model
    from tasks.files import open_memory_root
    from tasks.samples import generate_demo, write_transcripts

    echo = bars.echo
    now = now or datetime.now(settings.tz)
    echo(upgrade_schema(settings))
    runs = demo_days(settings, days, now)
    files = generate_demo(runs[-1].date(), settings.tz, days=days)
    fs, root = fsspec.core.url_to_fs(str(settings.data_dir / "demo" / "transcripts"))
    written = write_transcripts(fs, root, files)
    echo(f"sample transcripts: {len(files)} files in {root} ({written} new or changed)")
    ingest_transcripts(settings, root, bars)
    echo(f"back-filling memory-sync-daily for {len(runs)} days...")
    bars.update(DAYS, 0, len(runs))
    for number, as_of in enumerate(runs, start=1):
        report = memory_sync_daily(as_of=as_of)
        bars.update(DAYS, number, len(runs), f"{as_of:%Y-%m-%d}")
        w = report.written
        echo(
            f"  [{number:>2}/{len(runs)}] {as_of:%Y-%m-%d %H:%M}: "
            f"{counted(report.sessions_seen, 'session')},"
            f" {w.sessions} written, {report.unchanged + report.later_state} unchanged,"
            f" {report.skipped_few_user_messages + report.skipped_no_user_message} too short,"
            f" {counted(w.memories_added, 'memory', 'memories')},"
            f" {counted(report.blocks_appended, 'block')}"
        )
    # The model's query graph, built (once per machine) and kept while the tidy runs: the
    # search suggested below then starts at once. The process waits for it at exit.
    preload_model(settings.embedding)
    tidy = memory_weekly_tidy(as_of=runs[-1])
    echo(
        f"memory-weekly-tidy as of {runs[-1]:%Y-%m-%d %H:%M}: MEMORY.md for "
        f"{len(tidy.namespaces)} namespaces, {tidy.entered} entries in, {tidy.left} out"
    )
    memory = open_memory_root(settings)
    echo(f"memory files: {memory.root}")
    namespaces = [p.rsplit("/", 1)[-1] for p in sorted(memory.fs.ls(memory.root, detail=False))]
    for name in namespaces:
        count = len(memory.fs.glob(f"{memory.root}/{name}/memory/**/*.md"))
        has = "MEMORY.md and " if memory.fs.exists(f"{memory.root}/{name}/MEMORY.md") else ""
        echo(f"  {name}: {has}{count} daily files")
    echo(f"run `{command} demo` or `{command} sync` again: an unchanged day writes nothing.")
    ui = _prefect_ui()
    if ui is not None:
        echo(f"Prefect UI: {ui}/runs (this demo's {len(runs)} runs of memory-sync-daily are there)")
    if namespaces:
        first = namespaces[0]
        echo("try next:")
        echo(f'  {command} search {first} "what did we plan?" --explain')
        echo(f'  {command} prime {first} "Hi again!"')
        echo(f"  {command} status")


def _prefect_ui() -> str | None:
    """The address of the UI of the Prefect API this process used (Prefect is loaded)."""
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    return str(ui).rstrip("/") if ui else None
