"""One watchdog pass as plain functions: gather, check, decide, remember.

Notices are sent before the new states are saved: if sending fails, the states stay as
they were, so the next pass decides (and sends) again. An alert may repeat; it is never
lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from prefect.client.orchestration import SyncPrefectClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.kernel.settings import Settings, WatchdogSettings
from storage.quality_runs import latest_quality_run
from storage.queue import queue_stats
from storage.runs import mark_crashed
from storage.watchdog import CheckState, load_states, save_state, table_exists
from tasks.common import Notice, readable
from tasks.watchdog._alerts import decide
from tasks.watchdog._checks import (
    CheckResult,
    DeploymentInfo,
    check_deployment,
    check_quality,
    check_queue,
)
from tasks.watchdog._probe import observe, read_deployments


@dataclass(frozen=True)
class Decision:
    """A check's result, its next state and the notice it causes (if any)."""

    result: CheckResult
    state: CheckState
    notice: Notice | None


@dataclass
class WatchdogReport:
    """What one pass saw and did."""

    as_of: datetime
    dry_run: bool
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    channel: str = "none"

    @property
    def notices(self) -> list[Notice]:
        return [d.notice for d in self.decisions if d.notice is not None]

    @property
    def anomalies(self) -> list[CheckResult]:
        return [d.result for d in self.decisions if not d.result.ok]

    def markdown(self) -> str:
        """The run's report: each check, its counter, and what was sent."""
        head = f"# memory-cron-watchdog {readable(self.as_of)}" + (
            " (dry run)" if self.dry_run else ""
        )
        lines = [
            head,
            "",
            f"{len(self.anomalies)} anomalies, {len(self.notices)} notices ({self.channel})",
            "",
        ]
        lines += [
            "| check | status | count | summary | notice |",
            "| --- | --- | --- | --- | --- |",
        ]
        for d in self.decisions:
            status = "ok" if d.result.ok else "anomaly"
            notice = d.notice.kind if d.notice else ""
            count = d.state.anomaly_count
            lines.append(f"| {d.result.key} | {status} | {count} | {d.result.summary} | {notice} |")
        if self.notes:  # a line after the table's last row would be drawn as an empty row
            lines += ["", *(f"- note: {n}" for n in self.notes)]
        return "\n".join(lines)


def observe_deployments(
    client: SyncPrefectClient, tag: str, names: Sequence[str] | None, as_of: datetime
) -> tuple[list[DeploymentInfo], list[str]]:
    """Every matching deployment's state; notes name requested ones that do not exist."""
    found = [observe(client, d, as_of) for d in read_deployments(client, tag, names)]
    seen = {d.name for d in found}
    notes = [f"deployment {n} not found (tag {tag})" for n in names or () if n not in seen]
    return found, notes


def store_checks(
    engine: Engine, settings: Settings, ws: WatchdogSettings, as_of: datetime
) -> tuple[list[CheckResult], list[str]]:
    """Queue health and the last quality result; a table not created yet is skipped."""
    results: list[CheckResult] = []
    notes: list[str] = []
    with Session(engine) as session:
        if table_exists(session, "memory_write_queue"):
            results += check_queue(queue_stats(session, as_of, settings.queue), ws)
        else:
            notes.append("memory_write_queue does not exist yet: queue checks skipped")
        if table_exists(session, "quality_runs"):
            results.append(check_quality(latest_quality_run(session)))
        else:
            notes.append("quality_runs does not exist yet: data-quality check skipped")
    return results, notes


def mark_crashed_runs(engine: Engine) -> list[str]:
    """Mark ``crashed`` every running run whose process is gone; a note for each."""
    with Session(engine) as session, session.begin():
        crashed = mark_crashed(session)
    return [
        f"run {c.id} of {c.flow} (started {c.started_at:%Y-%m-%d %H:%M %Z}) marked crashed: "
        f"{c.reason}"
        for c in crashed
    ]


def all_checks(
    deployments: Sequence[DeploymentInfo],
    store_results: Sequence[CheckResult],
    as_of: datetime,
    ws: WatchdogSettings,
) -> list[CheckResult]:
    """Every check of this pass, deployments first."""
    results = [r for dep in deployments for r in check_deployment(dep, as_of, ws)]
    return results + list(store_results)


def decide_all(
    engine: Engine, results: Sequence[CheckResult], as_of: datetime, ws: WatchdogSettings
) -> list[Decision]:
    """Apply the alert rule to each result against its remembered state."""
    with Session(engine) as session:
        states = load_states(session)
    decisions = []
    for result in results:
        state, notice = decide(states.get(result.key), result, as_of, ws)
        decisions.append(Decision(result, state, notice))
    return decisions


def remember(engine: Engine, decisions: Sequence[Decision], as_of: datetime) -> None:
    """Save every check's new state in one transaction."""
    with Session(engine) as session, session.begin():
        for decision in decisions:
            save_state(session, decision.state, as_of)
