"""`archivist watchdog` as a user runs it: one flow run, the report printed."""

from __future__ import annotations

from click.testing import CliRunner

from deployments.commands.ops import watchdog_command
from storage.config import Settings


def test_watchdog_dry_run_prints_its_report(flow_env: Settings) -> None:
    result = CliRunner().invoke(
        watchdog_command,
        ["--as-of", "2026-11-20T10:15:00", "--dry-run", "--deployment", "memory-nowhere"],
    )
    assert result.exit_code == 0, result.output
    assert "# memory-cron-watchdog 2026-11-20 10:15:00 UTC (dry run)" in result.output
    assert "| queue:dead | ok | 0 |" in result.output
    assert "note: deployment memory-nowhere not found (tag archivist)" in result.output
