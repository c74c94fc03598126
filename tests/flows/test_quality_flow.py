"""memory-quality-report end to end through the Prefect engine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
from sqlalchemy import text
from sqlalchemy.orm import Session

from flows.quality_report import memory_quality_report
from storage.kernel.settings import Settings
from storage.quality_runs import latest_quality_run
from storage.server.engine import open_store
from tests.helpers import add_session, chat, run_sync

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
CHECK_AT = AS_OF + timedelta(hours=1)


def artifacts(key: str) -> list[object]:
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))
        )
    return [a.data for a in found]


def seed(settings: Settings) -> None:
    store = open_store(settings)
    add_session(
        store,
        "trip",
        "alice",
        chat(
            AS_OF - timedelta(hours=10), "Book the Lisbon flight.", "Done, TAP Friday.", "Thanks!"
        ),
    )
    run_sync(store, AS_OF)


def test_a_clean_run_publishes_artifacts_docs_and_a_quality_row(flow_env: Settings) -> None:
    seed(flow_env)

    report = memory_quality_report(as_of=CHECK_AT)

    assert report.success and report.checks
    tables = artifacts("memory-quality-report")
    assert tables, "table artifact missing"
    rows = tables[0] if isinstance(tables[0], list) else json.loads(str(tables[0]))
    assert len(rows) == len(report.checks)
    assert set(rows[0]) == {"check", "result", "unexpected", "observed"}  # fits the page
    assert rows[0]["check"].startswith("memories.") and {r["result"] for r in rows} == {"ok"}
    summaries = [str(a) for a in artifacts("memory-quality-summary")]
    assert any("passed" in s and "Data Docs: file://" in s for s in summaries)
    assert any("Report, readable offline: file://" in s for s in summaries)
    assert (flow_env.reports_dir / "data_docs" / "index.html").is_file()
    with Session(open_store(flow_env).engine) as session:
        last = latest_quality_run(session)
        statuses = session.execute(
            text("SELECT status FROM runs WHERE flow = 'memory-quality-report'")
        ).scalars()
        assert list(statuses) == ["completed"]
    assert last is not None and last.success and last.critical_failures == 0
    assert last.flow_run_id and last.suite_results["memories"]["failed"] == 0


def test_a_critical_failure_fails_the_run_after_recording_it(flow_env: Settings) -> None:
    seed(flow_env)
    store = open_store(flow_env)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE memories SET namespace = 'mallory'"
                " WHERE id = (SELECT min(id) FROM memories)"
            )
        )

    state = memory_quality_report(as_of=CHECK_AT, return_state=True)

    assert state.is_failed()
    assert "memories.namespace_matches_session: observed 1" in str(state.message)
    with Session(store.engine) as session:
        last = latest_quality_run(session)
    assert last is not None and not last.success and last.critical_failures == 1
    assert last.suite_results["memories"] == {"evaluated": 11, "failed": 1, "critical": 1}

    report = memory_quality_report(as_of=CHECK_AT, fail_on_critical=False)
    assert not report.success
