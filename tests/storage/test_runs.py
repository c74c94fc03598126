"""``runs`` after a crash: a run whose process died is marked crashed, a live one is not."""

from __future__ import annotations

import socket
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from storage import runs
from tests.storage.run_process import RunningFlow

SYNC, TIDY = "memory-sync-daily", "memory-weekly-tidy"


def rows(url: str) -> dict[uuid.UUID, tuple[Any, ...]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = conn.execute(
            text("SELECT id, flow, status, finished_at IS NOT NULL, report ->> 'reason' FROM runs")
        )
        out = {r[0]: tuple(r[1:]) for r in found}
    engine.dispose()
    return out


def test_the_next_run_of_a_flow_marks_its_killed_run_crashed(fresh_db: str) -> None:
    with (
        RunningFlow(fresh_db, SYNC) as killed,
        RunningFlow(fresh_db, SYNC) as live,
        RunningFlow(fresh_db, TIDY) as other_flow,
    ):
        killed.kill()
        other_flow.kill()
        engine = create_engine(fresh_db)
        with Session(engine) as session, session.begin():
            next_run = runs.start_run(session, SYNC, datetime.now(UTC), {}, None)

        found = rows(fresh_db)
        reason = f"its process {killed.pid} on {socket.gethostname()} is gone"
        assert found[killed.run_id] == (SYNC, "crashed", True, reason)
        assert found[live.run_id] == (SYNC, "running", False, None)
        assert found[other_flow.run_id] == (TIDY, "running", False, None)  # not this flow's
        assert found[next_run] == (SYNC, "running", False, None)

        live.finish()
        with Session(engine) as session, session.begin():
            crashed = runs.mark_crashed(session)  # every flow, as the watchdog does
            runs.finish_run(session, next_run, "completed", {})
        engine.dispose()

    assert [(c.id, c.flow) for c in crashed] == [(other_flow.run_id, TIDY)]
    assert rows(fresh_db)[live.run_id] == (SYNC, "completed", True, None)


def test_a_flow_run_whose_process_recorded_its_end_and_died_is_found_gone(fresh_db: str) -> None:
    # A shard's process killed after recording its outcome and before telling Prefect: the
    # parent run must not wait for an end that nobody will report.
    gone, alive, running = (str(uuid.uuid4()) for _ in range(3))
    engine = create_engine(fresh_db)
    with RunningFlow(fresh_db, SYNC, gone) as ended, RunningFlow(fresh_db, SYNC, running):
        ended.finish()  # records "completed", then its process exits
        with Session(engine) as session, session.begin():
            mine = runs.start_run(session, SYNC, datetime.now(UTC), {}, alive)
            runs.finish_run(session, mine, "completed", {})  # and this process lives on
        with Session(engine) as session:
            found = runs.ended_and_gone(session, [gone, alive, running])
    engine.dispose()

    assert found == {gone}


def test_shards_of_one_flow_running_at_once_leave_each_other_running(fresh_db: str) -> None:
    # The shards of memory-aging on one host: in another process, and two in this one.
    aging = "memory-aging"
    engine = create_engine(fresh_db)
    with RunningFlow(fresh_db, aging) as other_process:
        shards = []
        for shard in ("2/4", "3/4"):
            with Session(engine) as session, session.begin():
                params = {"shard": shard}
                shards.append(runs.start_run(session, aging, datetime.now(UTC), params, None))
        with Session(engine) as session, session.begin():
            crashed = runs.mark_crashed(session)  # as the watchdog does
        found = rows(fresh_db)
        other_process.finish()
    engine.dispose()

    assert crashed == []
    assert {found[i][1] for i in [other_process.run_id, *shards]} == {"running"}


def test_a_run_of_another_host_counts_as_crashed_only_after_a_day(fresh_db: str) -> None:
    engine = create_engine(fresh_db)
    now = datetime.now(UTC)
    started = {
        "elsewhere_old": ("elsewhere", 4242, now - timedelta(hours=25)),
        "elsewhere_new": ("elsewhere", 4242, now - timedelta(hours=1)),
        "unrecorded_old": (None, None, now - timedelta(hours=25)),  # from before migration 0013
        "unrecorded_new": (None, None, now - timedelta(hours=1)),
    }
    ids = {key: uuid.uuid4() for key in started}
    with engine.begin() as conn:
        for key, (host, pid, at) in started.items():
            conn.execute(
                text(
                    "INSERT INTO runs (id, flow, as_of, parameters, status, started_at, host, pid)"
                    " VALUES (:id, :flow, :at, '{}', 'running', :at, :host, :pid)"
                ),
                {"id": ids[key], "flow": SYNC, "at": at, "host": host, "pid": pid},
            )

    with Session(engine) as session, session.begin():
        runs.mark_crashed(session)
    engine.dispose()

    found = rows(fresh_db)
    assert {k: found[i][1] for k, i in ids.items()} == {
        "elsewhere_old": "crashed",
        "elsewhere_new": "running",
        "unrecorded_old": "crashed",
        "unrecorded_new": "running",
    }
    assert found[ids["elsewhere_old"]][3] == (
        "still running 25 h after it started, on elsewhere: longer than any run"
    )
    assert found[ids["unrecorded_old"]][3].endswith("with no process recorded: longer than any run")


def test_a_report_that_quotes_a_nul_or_a_lone_surrogate_is_stored_escaped(fresh_db: str) -> None:
    engine = create_engine(fresh_db)
    report = {"problems": ["f.jsonl:2: a\x00b", "lone \ud800"], "key\x00": {"n": 1}}
    with Session(engine) as session, session.begin():
        run_id = runs.start_run(session, "memory-sync-daily", datetime.now(UTC), {}, None)
        runs.finish_run(session, run_id, "completed", report)
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT report FROM runs WHERE id = :id"), {"id": run_id})
        assert stored.scalar_one() == {
            "problems": ["f.jsonl:2: a\\x00b", "lone \\ud800"],
            "key\\x00": {"n": 1},
        }
    engine.dispose()
