"""The deployments' table, from ``deployments.schedule`` (which ``archivist serve`` builds
its deployments from, and which ``prefect.yaml`` is tested against)."""

from __future__ import annotations

from deployments.schedule import DEPLOYMENTS, DeploymentSpec
from gen_reference.text import code, prose, table


def markdown() -> str:
    """One row per deployment: name, schedule, entrypoint and what it does."""
    rows = [
        [code(spec.name), _when(spec), code(spec.entrypoint), prose(spec.description)]
        for spec in DEPLOYMENTS
    ]
    return table(["Deployment", "Schedule", "Entrypoint", "What it does"], rows) + "\n"


def _when(spec: DeploymentSpec) -> str:
    if spec.cron is not None:
        return f"cron {code(spec.cron)}"
    if spec.interval_seconds is not None:
        minutes, seconds = divmod(spec.interval_seconds, 60)
        return f"every {minutes} minutes" if not seconds else f"every {spec.interval_seconds} s"
    return "none: started by hand"
