"""prefect.yaml and `archivist serve` are built from the same table and cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule

from deployments.schedule import DEPLOYMENTS, DeploymentSpec, load_flow
from deployments.serve import build_deployments
from flows.common import TAG
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import Settings

PREFECT_YAML = Path(__file__).parents[2] / "prefect.yaml"


def yaml_deployments() -> list[dict[str, Any]]:
    return list(yaml.safe_load(PREFECT_YAML.read_text())["deployments"])


def yaml_schedule(entry: dict[str, Any]) -> tuple[str | None, int | None]:
    if "schedules" not in entry:
        return None, None
    [schedule] = entry["schedules"]
    return schedule.get("cron"), schedule.get("interval")


def test_prefect_yaml_equals_the_table() -> None:
    in_yaml = [
        (d["name"], d["entrypoint"], d["description"], *yaml_schedule(d))
        for d in yaml_deployments()
    ]
    in_table = [
        (s.name, s.entrypoint, s.description, s.cron, s.interval_seconds) for s in DEPLOYMENTS
    ]
    assert in_yaml == in_table


def test_prefect_yaml_pool_tags_and_time_zone() -> None:
    for entry in yaml_deployments():
        assert entry["work_pool"]["name"] == "archivist-process"
        assert entry["tags"] == [TAG]
        for schedule in entry.get("schedules", []):
            assert schedule["timezone"] == "{{ archivist-settings.timezone }}"


def test_every_entrypoint_is_an_archivist_flow_of_that_name() -> None:
    for spec in DEPLOYMENTS:
        assert Path(PREFECT_YAML.parent, spec.entrypoint.split(":")[0]).is_file()
        assert load_flow(spec).name == spec.name


def test_serve_builds_the_table_in_the_configured_time_zone(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, timezone="Europe/Berlin")
    built = build_deployments(settings)
    assert [d.name for d in built] == [s.name for s in DEPLOYMENTS]
    for spec, deployment in zip(DEPLOYMENTS, built, strict=True):
        assert deployment.tags == [TAG]
        assert deployment.description == spec.description
        if spec.cron is None and spec.interval_seconds is None:
            assert not deployment.schedules  # run on demand
            continue
        [schedule] = [s.schedule for s in deployment.schedules or []]
        if spec.cron is not None:
            assert isinstance(schedule, CronSchedule) and schedule.cron == spec.cron
        else:
            assert isinstance(schedule, IntervalSchedule)
            assert schedule.interval.total_seconds() == spec.interval_seconds
        assert schedule.timezone == "Europe/Berlin"


def test_an_unknown_entrypoint_is_a_clear_error() -> None:
    spec = DeploymentSpec(
        "memory-nothing", "flows/nothing.py:memory_nothing", "none", cron="0 * * * *"
    )
    with pytest.raises(ConfigurationError, match="memory-nothing: cannot import"):
        load_flow(spec)
