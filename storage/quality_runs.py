"""``quality_runs``: the outcome of every ``memory-quality-report`` run.

``suite_results`` holds, per suite, how many expectations were evaluated, failed, and
failed while critical. The watchdog reads the newest row's ``success``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, DateTime, Integer, String, Text, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base


class QualityRun(Base):
    __tablename__ = "quality_runs"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    run_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), index=True
    )
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    suite_results: Mapped[dict[str, Any]] = mapped_column(JSONB)
    success: Mapped[bool] = mapped_column(Boolean)
    critical_failures: Mapped[int] = mapped_column(Integer)
    data_docs_uri: Mapped[str | None] = mapped_column(Text)
    flow_run_id: Mapped[str | None] = mapped_column(String(64))


@dataclass(frozen=True)
class QualityRunRecord:
    """One run's outcome, as written and as read back."""

    as_of: datetime
    suite_results: dict[str, Any]
    success: bool
    critical_failures: int
    data_docs_uri: str | None
    flow_run_id: str | None
    run_at: datetime | None = None
    id: int | None = None


def record_quality_run(session: Session, record: QualityRunRecord) -> int:
    """Insert one run's outcome; returns its id."""
    row = QualityRun(
        as_of=record.as_of,
        suite_results=record.suite_results,
        success=record.success,
        critical_failures=record.critical_failures,
        data_docs_uri=record.data_docs_uri,
        flow_run_id=record.flow_run_id,
    )
    session.add(row)
    session.flush()
    return row.id


def latest_quality_run(session: Session) -> QualityRunRecord | None:
    """The newest run's outcome, or None before the first run."""
    row = session.scalars(
        select(QualityRun).order_by(QualityRun.run_at.desc(), QualityRun.id.desc()).limit(1)
    ).first()
    if row is None:
        return None
    return QualityRunRecord(
        as_of=row.as_of,
        suite_results=row.suite_results,
        success=row.success,
        critical_failures=row.critical_failures,
        data_docs_uri=row.data_docs_uri,
        flow_run_id=row.flow_run_id,
        run_at=row.run_at,
        id=row.id,
    )
