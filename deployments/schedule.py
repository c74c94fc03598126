"""The one table of Archivist's deployments: name, flow, schedule, description.

``archivist serve`` builds its deployments from it, and a test holds ``prefect.yaml`` equal
to it, so the two ways of running the flows cannot drift apart.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import Settings

if TYPE_CHECKING:  # the table is read without Prefect (the docs site's build)
    from prefect import Flow


@dataclass(frozen=True)
class DeploymentSpec:
    """One deployment: at most one of ``cron`` and ``interval_seconds`` is set; with
    neither, it runs when started (``memory-sharded-run``)."""

    name: str
    entrypoint: str
    description: str
    cron: str | None = None
    interval_seconds: int | None = None

    @property
    def interval(self) -> timedelta | None:
        return None if self.interval_seconds is None else timedelta(seconds=self.interval_seconds)


DEPLOYMENTS: tuple[DeploymentSpec, ...] = (
    DeploymentSpec(
        "memory-sync-daily",
        "flows/daily_sync.py:memory_sync_daily",
        "Sessions of the last 26 hours into memories, episodes and the daily log.",
        cron="0 23 * * *",
    ),
    DeploymentSpec(
        "memory-session-summaries",
        "flows/session_summaries.py:memory_session_summaries",
        "Sessions idle for 30 minutes into memories, so memory is fresh within minutes.",
        cron="*/5 * * * *",
    ),
    DeploymentSpec(
        "memory-queue-drain",
        "flows/queue_drain.py:memory_queue_drain",
        "Safety net beside `archivist worker`: apply queued writes, reclaim stuck ones.",
        interval_seconds=300,
    ),
    DeploymentSpec(
        "memory-weekly-tidy",
        "flows/weekly_tidy.py:memory_weekly_tidy",
        "The week's daily logs into MEMORY.md (capped) and a weekly summary; archive the logs.",
        cron="0 22 * * 0",
    ),
    DeploymentSpec(
        "memory-aging",
        "flows/aging.py:memory_aging",
        "Salience decay, compression after 90 days, cold Parquet after 365 days.",
        cron="30 3 * * *",
    ),
    DeploymentSpec(
        "memory-cron-watchdog",
        "flows/watchdog.py:memory_cron_watchdog",
        "Paused, failed, stale or late deployments, queue health and data quality; alerts.",
        cron="15 */2 * * *",
    ),
    DeploymentSpec(
        "memory-quality-report",
        "flows/quality_report.py:memory_quality_report",
        "Great Expectations suites over the memory tables; Data Docs and an artifact.",
        cron="30 23 * * *",
    ),
    DeploymentSpec(
        "memory-sharded-run",
        "flows/sharded_run.py:memory_sharded_run",
        "A flow split by namespace into shards that the work pool's workers share; unscheduled.",
    ),
)


def deploy_settings() -> dict[str, str]:
    """prefect.yaml's build step: the settings ``prefect deploy`` writes into the schedules.

    Read like ``archivist serve`` reads them, so an unset ``ARCHIVIST_TIMEZONE`` deploys
    as UTC (Prefect's own ``{{ $VAR }}`` templating has no default and stores an empty
    time zone) and an unknown zone stops the deploy.
    """
    return {"timezone": Settings().timezone}


def load_flow(spec: DeploymentSpec) -> Flow[..., object]:
    """Import the flow object an entrypoint names (``flows/x.py:func`` -> ``flows.x.func``)."""
    from prefect import Flow

    path, _, attr = spec.entrypoint.partition(":")
    module_name = path.removesuffix(".py").replace("/", ".")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"deployment {spec.name}: cannot import {spec.entrypoint} ({exc})"
        ) from exc
    if not isinstance(found, Flow):
        raise ConfigurationError(f"deployment {spec.name}: {spec.entrypoint} is not a flow")
    return found
