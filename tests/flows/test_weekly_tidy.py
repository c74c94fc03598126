"""memory-weekly-tidy end to end through the Prefect engine, and the CLI command."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    TaskRunFilter,
    TaskRunFilterName,
)
from sqlalchemy import text

from deployments.commands.tidy import tidy_command
from flows.weekly_tidy import memory_weekly_tidy
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import add_session, chat, pseudonym, run_sync

SUNDAY = datetime(2026, 11, 22, 22, 0, tzinfo=UTC)


async def artifact_markdown(key: str) -> list[str]:
    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))
        )
    return [str(a.data) for a in found]


async def task_run_names(prefix: str) -> set[str]:
    async with get_client() as client:
        found = await client.read_task_runs(
            task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_=prefix))
        )
    return {run.name for run in found}


def seed_week(settings: Settings) -> None:
    store = open_store(settings)
    for offset, (namespace, topic) in enumerate(
        [("alice", "Lisbon flights"), ("alice", "dentist on Tuesday"), ("bob", "billing deploy")]
    ):
        day = SUNDAY - timedelta(days=5 - offset, hours=12)
        add_session(
            store,
            f"s{offset}",
            namespace,
            chat(
                day,
                f"I need help with the {topic}.",
                "Sure, what exactly?",
                f"I prefer to decide on the {topic} today. Let's go with the first option.",
            ),
        )
        run_sync(store, day.replace(hour=23))


def test_flow_tidies_reports_and_reruns_without_change(flow_env: Settings) -> None:
    seed_week(flow_env)
    root = Path(flow_env.memory_root_url)

    first = memory_weekly_tidy(as_of=SUNDAY)
    memory = (root / "alice" / "MEMORY.md").read_bytes()
    second = memory_weekly_tidy(as_of=SUNDAY)

    store = open_store(flow_env)
    names = {pseudonym(store, ns): ns for ns in ("alice", "bob")}
    # Namespaces by their pseudonyms, in the report and the task-run names alike.
    assert sorted(n.namespace for n in first.namespaces) == sorted(names)
    first.namespaces.sort(key=lambda n: names[n.namespace])
    assert first.entered > 0 and first.week == "2026-11-16"
    alice = first.namespaces[0]
    assert alice.memory_md == "written" and alice.lines <= 80 and alice.bytes <= 5120
    assert alice.weekly_file == f"{alice.namespace}/memory/weekly/2026-11-16.md"
    assert len(alice.logs_moved) == 2 and (root / "alice/memory/archive/2026").is_dir()
    assert second.entered == 0 and second.left == 0
    assert (root / "alice" / "MEMORY.md").read_bytes() == memory
    with open_store(flow_env).engine.connect() as conn:
        statuses = conn.execute(
            text("SELECT status, report->>'entered' FROM runs WHERE flow = 'memory-weekly-tidy'")
        ).all()
    assert sorted(tuple(r) for r in statuses) == [
        ("completed", "0"),
        ("completed", str(first.entered)),
    ]
    published = asyncio.run(artifact_markdown("memory-weekly-tidy-report"))
    assert published and "# memory-weekly-tidy report" in published[0]
    assert "MEMORY.md:" in published[0] and "Entered (by source memory):" in first.markdown()
    assert "Lisbon" not in published[0] and "Lisbon" in memory.decode()  # ids, never text
    shown = first.markdown() + json.dumps(first.as_dict())
    assert all(f"## {label}" in shown for label in names) and "alice" not in shown
    runs = asyncio.run(task_run_names("tidy-"))
    assert {f"tidy-{label}" for label in names} <= runs and "tidy-alice" not in runs


def test_cli_dry_run_prints_the_report_and_writes_nothing(flow_env: Settings) -> None:
    seed_week(flow_env)

    result = CliRunner().invoke(
        tidy_command, ["--as-of", "2026-11-22T22:00:00", "--namespace", "alice", "--dry-run"]
    )

    assert result.exit_code == 0, result.output
    assert "| dry run | yes |" in result.output and "would write" in result.output
    assert not (Path(flow_env.memory_root_url) / "alice" / "MEMORY.md").exists()
    # The operator sees the name beside the pseudonym the report holds.
    assert f"## {pseudonym(open_store(flow_env), 'alice')} (alice)" in result.output
