"""memory-cron-watchdog end to end: real deployments and flow runs in the Prefect harness,
alerts received by a real local HTTP server."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from prefect import Flow, flow
from prefect.client.orchestration import get_client
from prefect.deployments.runner import RunnerDeployment
from prefect.flow_engine import run_flow
from prefect.schedules import Cron, Interval
from sqlalchemy import text

from flows.common import TAG
from flows.watchdog import memory_cron_watchdog
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.storage.run_process import RunningFlow
from tests.webhook_server import Webhook, webhook_server


@flow(name="watchdog-target")
def watchdog_target(*, fail: bool = False) -> str:
    if fail:
        raise RuntimeError("the target failed on purpose")
    return "done"


@pytest.fixture
def hook(flow_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Webhook]:
    with webhook_server() as server:
        monkeypatch.setenv("ARCHIVIST_WATCHDOG__WEBHOOK_URL", server.url)
        monkeypatch.setenv("ARCHIVIST_WATCHDOG__WEBHOOK_BACKOFF_SECONDS", "0.01")
        yield server


def deploy(name: str, target: Flow[..., str] = watchdog_target, **schedule: object) -> uuid.UUID:
    """Register a deployment of the target flow, tagged like Archivist's."""
    deployment = target.to_deployment(name=name, tags=[TAG], **schedule)  # type: ignore[arg-type]
    assert isinstance(deployment, RunnerDeployment)
    deployment_id = deployment.apply()
    assert isinstance(deployment_id, uuid.UUID)
    return deployment_id


def run_for(
    deployment_id: uuid.UUID, *, fail: bool, target: Flow[..., str] = watchdog_target
) -> None:
    """One real flow run of the deployment, executed here by the engine."""
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run_from_deployment(deployment_id, parameters={"fail": fail})
    run_flow(target, flow_run=flow_run, parameters={"fail": fail}, return_type="state")


def watch(name: str, as_of: datetime, *, dry_run: bool = False) -> list[str]:
    report = memory_cron_watchdog(as_of=as_of, deployments=[name], dry_run=dry_run)
    return [f"{n.kind}:{n.check}" for n in report.notices]


def test_failing_run_alerts_on_the_second_anomaly_then_reminds_and_recovers(hook: Webhook) -> None:
    name = f"wd-fail-{uuid.uuid4().hex[:8]}"
    key = f"{name}:last-run"
    deployment_id = deploy(name)
    now = datetime.now(UTC)
    assert watch(name, now) == []  # no finished run yet: OK, its snapshot is kept
    run_for(deployment_id, fail=True)

    t1 = now + timedelta(hours=1)
    assert watch(name, t1) == []
    assert hook.payloads(key) == []  # one anomaly: no alert

    assert watch(name, t1 + timedelta(hours=2)) == [f"alert:{key}"]
    [alert] = hook.payloads(key)
    assert alert["text"].startswith(":rotating_light: Archivist anomaly")
    assert alert["anomaly_count"] == 2
    assert [s["status"] for s in alert["snapshots"]] == ["ok", "anomaly", "anomaly"]
    assert alert["snapshots"][-1]["state"] == "Failed"

    assert watch(name, t1 + timedelta(hours=4)) == []  # within the reminder interval
    assert len(hook.payloads(key)) == 1

    assert watch(name, t1 + timedelta(hours=27)) == [f"reminder:{key}"]
    assert hook.payloads(key)[-1]["kind"] == "reminder"

    run_for(deployment_id, fail=False)
    assert watch(name, t1 + timedelta(hours=28)) == [f"recovery:{key}"]
    recovery = hook.payloads(key)[-1]
    assert recovery["kind"] == "recovery" and recovery["status"] == "ok"
    assert len(hook.payloads(key)) == 3


def test_a_run_outside_any_deployment_counts_for_its_flows_deployment(flow_env: Settings) -> None:
    uid = uuid.uuid4().hex[:8]
    target = flow(name=f"wd-by-hand-{uid}")(watchdog_target.fn)  # no runs of other tests
    mine, other, never = (f"wd-{kind}-{uid}" for kind in ("mine", "other", "never"))
    deploy(mine, target, schedules=[Cron("0 * * * *", timezone="UTC")])
    other_id = deploy(other, target)
    deploy(never, flow(name=f"wd-never-{uid}")(watchdog_target.fn))
    target(fail=False)  # as `archivist sync` runs a flow: no deployment
    run_for(other_id, fail=True, target=target)  # another deployment's run, after it

    report = memory_cron_watchdog(
        as_of=datetime.now(UTC) + timedelta(minutes=5),
        deployments=[mine, other, never],
        dry_run=True,
    )

    results = {r.key: r for r in (d.result for d in report.decisions)}
    by_hand = results[f"{mine}:last-run"]
    assert by_hand.ok and by_hand.summary.endswith(" (no deployment): Completed")
    assert results[f"{mine}:stale"].summary.startswith("last completed run 0.1 h ago")
    assert results[f"{other}:last-run"].summary.endswith(": Failed")  # its own, newer run
    assert not results[f"{other}:last-run"].ok
    assert results[f"{never}:last-run"].summary == "no finished run yet"


def test_paused_and_stale_deployments_alert(hook: Webhook) -> None:
    paused, stale = (f"wd-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("paused", "stale"))
    paused_id = deploy(paused, schedules=[Interval(timedelta(hours=1))])
    stale_id = deploy(stale, schedules=[Cron("0 * * * *", timezone="UTC")])
    with get_client(sync_client=True) as client:
        client.pause_deployment(paused_id)
    run_for(stale_id, fail=False)
    as_of = datetime.now(UTC) + timedelta(hours=3)  # hourly + 30 min grace has passed

    for name in (paused, stale):
        assert watch(name, as_of) == []
    assert f"alert:{paused}:paused" in watch(paused, as_of + timedelta(minutes=1))
    assert f"alert:{stale}:stale" in watch(stale, as_of + timedelta(minutes=1))
    [alert] = hook.payloads(f"{stale}:stale")
    assert alert["snapshots"][-1]["age_hours"] >= 3
    assert hook.payloads(f"{paused}:paused")[0]["snapshots"][-1]["paused"] is True


def test_dry_run_sends_and_remembers_nothing(hook: Webhook, flow_env: Settings) -> None:
    name = f"wd-dry-{uuid.uuid4().hex[:8]}"
    run_for(deploy(name), fail=True)
    as_of = datetime.now(UTC) + timedelta(minutes=5)
    for minutes in (0, 10, 20):
        report = memory_cron_watchdog(
            as_of=as_of + timedelta(minutes=minutes), deployments=[name], dry_run=True
        )
        assert [r.key for r in report.anomalies] == [f"{name}:last-run"]
        assert report.notices == []  # each dry pass sees only the stored (empty) history
    assert hook.received == []
    with open_store(flow_env).engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM watchdog_state")).scalar_one() == 0


def test_state_is_kept_per_check_in_postgres(hook: Webhook, flow_env: Settings) -> None:
    name = f"wd-state-{uuid.uuid4().hex[:8]}"
    run_for(deploy(name), fail=True)
    as_of = datetime.now(UTC) + timedelta(minutes=5)
    watch(name, as_of)
    watch(name, as_of + timedelta(hours=2))
    with open_store(flow_env).engine.connect() as conn:
        row = conn.execute(
            text("SELECT anomaly_count, alerting, last3 FROM watchdog_state WHERE check_key = :k"),
            {"k": f"{name}:last-run"},
        ).one()
        queue = conn.execute(
            text("SELECT anomaly_count FROM watchdog_state WHERE check_key = 'queue:dead'")
        ).scalar_one()
    assert row.anomaly_count == 2 and row.alerting is True
    assert len(row.last3) == 2
    assert queue == 0


def test_the_watchdog_marks_a_run_whose_process_was_killed_crashed(flow_env: Settings) -> None:
    assert flow_env.database_url is not None
    url = flow_env.database_url.get_secret_value()
    with RunningFlow(url, "memory-aging") as killed, RunningFlow(url, "memory-aging") as live:
        killed.kill()
        dry = memory_cron_watchdog(as_of=datetime.now(UTC), deployments=[], dry_run=True)
        report = memory_cron_watchdog(as_of=datetime.now(UTC), deployments=[])
        with open_store(flow_env).engine.connect() as conn:
            status = dict(conn.execute(text("SELECT id, status FROM runs")).tuples().all())
        live.finish()

    assert not any("marked crashed" in note for note in dry.notes)  # a dry run changes nothing
    [note] = [n for n in report.notes if "marked crashed" in n]
    assert note.startswith(f"run {killed.run_id} of memory-aging")
    assert note.endswith(f"its process {killed.pid} on {socket.gethostname()} is gone")
    assert status == {killed.run_id: "crashed", live.run_id: "running"}
