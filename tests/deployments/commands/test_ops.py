"""`archivist watchdog` as a user runs it: one flow run, the report printed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName
from prefect.client.schemas.sorting import FlowRunSort
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron

from deployments.commands.ops import watchdog_command
from deployments.commands.sync import run_demo
from deployments.progress import Bars
from flows.common import TAG
from flows.daily_sync import memory_sync_daily
from flows.weekly_tidy import memory_weekly_tidy
from storage.kernel.settings import Settings

DEMO_NOW = datetime(2026, 11, 20, 23, 30, tzinfo=UTC)


def test_watchdog_dry_run_prints_its_report(flow_env: Settings) -> None:
    result = CliRunner().invoke(
        watchdog_command,
        ["--as-of", "2026-11-20T10:15:00", "--dry-run", "--deployment", "memory-nowhere"],
    )
    assert result.exit_code == 0, result.output
    assert "# memory-cron-watchdog 2026-11-20 10:15:00 UTC (dry run)" in result.output
    assert "| queue:dead | ok | 0 |" in result.output
    assert "note: deployment memory-nowhere not found (tag archivist)" in result.output


@flow(name="memory-never-run-in-tests")
def never_run() -> None:
    """A deployed flow that nothing runs."""


def deploy(target: object, name: str, cron: str) -> None:
    deployment = target.to_deployment(  # type: ignore[attr-defined]
        name=name, tags=[TAG], schedules=[Cron(cron, timezone="UTC")]
    )
    assert isinstance(deployment, RunnerDeployment)
    deployment.apply()


def newest_run_name(flow_name: str) -> str:
    with get_client(sync_client=True) as client:
        [run] = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
            sort=FlowRunSort.END_TIME_DESC,
            limit=1,
        )
    return run.name


def test_after_the_demo_the_watchdog_counts_its_runs(flow_env: Settings) -> None:
    uid = uuid.uuid4().hex[:8]
    sync, tidy, never = (f"wd-{kind}-{uid}" for kind in ("sync", "tidy", "never"))
    deploy(memory_sync_daily, sync, "0 23 * * *")
    deploy(memory_weekly_tidy, tidy, "0 22 * * 0")
    deploy(never_run, never, "0 4 * * *")
    run_demo(flow_env, 2, Bars(lambda line: None), now=DEMO_NOW)  # runs as of 2026-11-19 and -20
    tidy_run = newest_run_name("memory-weekly-tidy")
    # Prefect stamps when a run ended in real time: the watchdog looks just after that.
    as_of = datetime.now(UTC) + timedelta(minutes=5)

    result = CliRunner().invoke(
        watchdog_command,
        ["--as-of", f"{as_of:%Y-%m-%dT%H:%M:%S%z}", "--dry-run"]
        + [arg for name in (sync, tidy, never) for arg in ("--deployment", name)],
    )

    assert result.exit_code == 0, result.output
    rows = {line.split(" | ")[0][2:]: line for line in result.output.splitlines() if "|" in line}
    assert "no finished run yet" not in rows[f"{sync}:last-run"]
    assert "(no deployment): Completed" in rows[f"{sync}:last-run"]
    assert f"last run {tidy_run} (no deployment): Completed" in rows[f"{tidy}:last-run"]
    assert "| ok | 0 | last completed run 0.1 h ago;" in rows[f"{tidy}:stale"]  # not "never"
    assert "| ok | 0 | no finished run yet |" in rows[f"{never}:last-run"]
