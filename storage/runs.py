"""``runs``: provenance of every flow run that wrote to the store (what, when, outcome).

A run records the process that runs it (host, pid, the process's start time). A run
killed outright never records its end; ``mark_crashed`` finds such runs, at the start of
the next run of the same flow and in the watchdog, and marks them ``crashed`` with the
reason in ``report``. A process of this host is checked directly (``storage.kernel.processes``);
one of another host, or a run recorded before runs named their process, counts as
crashed only once it has been running for ``STALE_AFTER`` (no run takes a day; if one
did, its end overwrites the mark).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, Index, Integer, String, func, select, text, update
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base
from storage.kernel.inputs import storable_json
from storage.kernel.processes import host_name, pid_running, this_process

STALE_AFTER = timedelta(hours=24)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_running", "flow", postgresql_where=text("status = 'running'")),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    flow: Mapped[str] = mapped_column(String(100), index=True)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    parameters: Mapped[dict[str, Any]] = mapped_column(JSONB)
    status: Mapped[str] = mapped_column(String(20))
    flow_run_id: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    host: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None] = mapped_column(Integer)
    process_started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


@dataclass(frozen=True)
class CrashedRun:
    """A run found dead and marked ``crashed``."""

    id: uuid.UUID
    flow: str
    started_at: datetime
    reason: str


def start_run(
    session: Session,
    flow: str,
    as_of: datetime,
    parameters: dict[str, Any],
    flow_run_id: str | None,
) -> uuid.UUID:
    """Record that a run started in this process, after marking the flow's earlier runs
    whose process is gone ``crashed``; returns its id."""
    mark_crashed(session, flow)
    run_id, me = uuid.uuid4(), this_process()
    session.add(
        Run(
            id=run_id,
            flow=flow,
            as_of=as_of,
            parameters=parameters,
            status="running",
            flow_run_id=flow_run_id,
            host=me.host,
            pid=me.pid,
            process_started_at=me.started,
        )
    )
    session.flush()
    return run_id


def finish_run(session: Session, run_id: uuid.UUID, status: str, report: dict[str, Any]) -> None:
    """Record a run's outcome and report (a NUL or lone surrogate it quotes escaped)."""
    session.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(status=status, report=storable_json(report), finished_at=func.now())
    )


def end_flow_run(session: Session, flow_run_id: str, status: str, reason: str) -> int:
    """Close the still-running runs of one Prefect flow run that failed or crashed."""
    result = session.execute(
        update(Run)
        .where(Run.flow_run_id == flow_run_id, Run.status == "running")
        .values(status=status, report={"reason": reason}, finished_at=func.now())
    )
    return int(getattr(result, "rowcount", 0))


def mark_crashed(session: Session, flow: str | None = None) -> list[CrashedRun]:
    """Mark ``crashed`` the running runs (of ``flow``, or of every flow) whose process is
    gone, with the reason; returns them."""
    now: datetime = session.execute(select(func.now())).scalar_one()
    running = select(Run).where(Run.status == "running").order_by(Run.started_at)
    if flow is not None:
        running = running.where(Run.flow == flow)
    crashed = []
    for run in session.scalars(running):
        reason = crash_reason(run, now)
        if reason is not None:
            run.status, run.finished_at, run.report = "crashed", now, {"reason": reason}
            crashed.append(CrashedRun(run.id, run.flow, run.started_at, reason))
    session.flush()
    return crashed


def crash_reason(run: Run, now: datetime) -> str | None:
    """Why a running run is known to be dead, or None if it may still be running."""
    alive = _process_alive(run)
    if alive is not None:
        return None if alive else f"its process {run.pid} on {run.host} is gone"
    if now - run.started_at < STALE_AFTER:
        return None
    where = f"on {run.host}" if run.host else "with no process recorded"
    hours = (now - run.started_at) / timedelta(hours=1)
    return f"still running {hours:.0f} h after it started, {where}: longer than any run"


def reports_by_flow_run(session: Session, flow_run_ids: Sequence[str]) -> dict[str, RunOutcome]:
    """The status and report each Prefect flow run recorded (its newest run row)."""
    newest = _newest_runs(session, flow_run_ids)
    return {flow_run_id: RunOutcome(r.status, r.report) for flow_run_id, r in newest.items()}


def ended_and_gone(session: Session, flow_run_ids: Sequence[str]) -> set[str]:
    """The Prefect flow runs among these whose newest run ended (its outcome recorded) and
    whose process, on this host, is gone: a process killed between recording its outcome
    and reporting its end to Prefect leaves the flow run running there for good. Runs of
    other hosts are not judged (their processes cannot be seen from here)."""
    return {
        flow_run_id
        for flow_run_id, run in _newest_runs(session, flow_run_ids).items()
        if run.status != "running" and _process_alive(run) is False
    }


def _newest_runs(session: Session, flow_run_ids: Sequence[str]) -> dict[str, Run]:
    """Each of these Prefect flow runs' newest run row (by start), if it has any."""
    found = select(Run).where(Run.flow_run_id.in_(list(flow_run_ids))).order_by(Run.started_at)
    return {str(run.flow_run_id): run for run in session.scalars(found)}


def _process_alive(run: Run) -> bool | None:
    """Whether the process that ran ``run`` still runs; None when it cannot be seen from
    here (another host's, or none recorded)."""
    if run.host != host_name() or run.pid is None:
        return None
    return pid_running(run.pid, run.process_started_at)


@dataclass(frozen=True)
class RunOutcome:
    """What a run recorded of itself: ``running``, ``completed``, ``failed`` or ``crashed``."""

    status: str
    report: dict[str, Any] | None
