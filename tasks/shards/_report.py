"""The sharded run's report: each shard's outcome and the sum of their own reports."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy.orm import Session

from storage import runs
from storage.kernel.shards import Shard
from storage.server.engine import Store
from tasks.common import readable
from tasks.shards._fan_out import ShardState


@dataclass
class ShardRun:
    """One shard's deployment run, and what it recorded in the store."""

    shard: str
    flow_run: str
    state: str
    recorded: str  # the run's own status in the store; "none" before it started
    report: dict[str, Any] | None = None

    @property
    def completed(self) -> bool:
        return self.state == "Completed" and self.recorded == "completed"


@dataclass
class ShardedReport:
    """What a sharded run started, how each shard ended, and the shards' counts summed."""

    flow: str
    as_of: str
    shards: list[ShardRun]
    totals: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def unfinished(self) -> list[ShardRun]:
        return [s for s in self.shards if not s.completed]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        done = len(self.shards) - len(self.unfinished)
        lines = [
            f"# {self.flow} in {len(self.shards)} shards as of {readable(self.as_of)}",
            "",
            f"{done} of {len(self.shards)} shards completed in {self.seconds:.1f} s.",
            "",
            "| shard | run | state |",
            "| --- | --- | --- |",
        ]
        lines += [f"| {s.shard} | {s.flow_run} | {s.state} |" for s in self.shards]
        lines += ["", "## Totals", "", "| count | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in _flat(self.totals)]
        return "\n".join(lines) + "\n"


@task(name="collect-shard-reports", cache_policy=NO_CACHE)
def collect_task(store: Store, finished: dict[Shard, ShardState]) -> list[ShardRun]:
    """Each shard's Prefect state beside the status and report its run recorded."""
    ids = [s.flow_run_id for s in finished.values()]
    with Session(store.engine) as session:
        recorded = runs.reports_by_flow_run(session, ids)
    out = []
    for shard, run in sorted(finished.items(), key=lambda item: item[0].index):
        outcome = recorded.get(run.flow_run_id)
        out.append(
            ShardRun(
                shard=str(shard),
                flow_run=run.name,
                state=run.state,
                recorded=outcome.status if outcome else "none",
                report=outcome.report if outcome else None,
            )
        )
    return out


def sum_reports(reports: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Counts of several reports of one flow, added up: numbers are summed, nested counts
    summed key by key, lists joined; text, flags and times, which do not add, are left out."""
    total: dict[str, Any] = {}
    for report in reports:
        for key, value in (report or {}).items():
            if isinstance(value, bool) or key == "seconds":
                continue
            if isinstance(value, int | float):
                total[key] = total.get(key, 0) + value
            elif isinstance(value, dict):
                total[key] = sum_reports([total.get(key), value])
            elif isinstance(value, list):
                total[key] = [*total.get(key, []), *value]
    return total


def _flat(counts: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in counts.items():
        name = f"{prefix}{key}".replace("_", " ")
        if isinstance(value, dict):
            rows += _flat(value, f"{prefix}{key}.")
        else:
            rows.append((name, len(value) if isinstance(value, list) else value))
    return rows
