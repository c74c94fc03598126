"""``runs``: provenance of every flow run that wrote to the store (what, when, outcome)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, String, func, update
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.base import Base


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    flow: Mapped[str] = mapped_column(String(100), index=True)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    parameters: Mapped[dict[str, Any]] = mapped_column(JSONB)
    status: Mapped[str] = mapped_column(String(20))
    flow_run_id: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


def start_run(
    session: Session,
    flow: str,
    as_of: datetime,
    parameters: dict[str, Any],
    flow_run_id: str | None,
) -> uuid.UUID:
    """Record that a run started; returns its id."""
    run_id = uuid.uuid4()
    session.add(
        Run(
            id=run_id,
            flow=flow,
            as_of=as_of,
            parameters=parameters,
            status="running",
            flow_run_id=flow_run_id,
        )
    )
    session.flush()
    return run_id


def finish_run(session: Session, run_id: uuid.UUID, status: str, report: dict[str, Any]) -> None:
    """Record a run's outcome and report."""
    session.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(status=status, report=report, finished_at=func.now())
    )
