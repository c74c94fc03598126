"""``watchdog_state``: per-check anomaly counters and the last 3 snapshots (seed 004).

Also whether a table exists yet: the watchdog reads tables other flows own, and skips
their checks with a note on a schema that predates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, Integer, String, select, text
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.kernel.base import Base


class WatchdogStateRow(Base):
    __tablename__ = "watchdog_state"

    check_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    anomaly_count: Mapped[int] = mapped_column(Integer, server_default="0")
    alerting: Mapped[bool] = mapped_column(Boolean, server_default="false")
    last_alert_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_status: Mapped[str] = mapped_column(String(20))
    last3: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, server_default="[]")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


@dataclass(frozen=True)
class CheckState:
    """What the watchdog remembers about one check between runs."""

    check_key: str
    anomaly_count: int = 0
    alerting: bool = False
    last_alert_at: datetime | None = None
    last_status: str = "ok"
    last3: list[dict[str, Any]] = field(default_factory=list)
    updated_at: datetime | None = None


TABLE_EXISTS = text("SELECT to_regclass(:name) IS NOT NULL")


def load_states(session: Session) -> dict[str, CheckState]:
    """Every check's remembered state, by key."""
    rows = session.scalars(select(WatchdogStateRow)).all()
    return {
        row.check_key: CheckState(
            check_key=row.check_key,
            anomaly_count=row.anomaly_count,
            alerting=row.alerting,
            last_alert_at=row.last_alert_at,
            last_status=row.last_status,
            last3=list(row.last3),
            updated_at=row.updated_at,
        )
        for row in rows
    }


def save_state(session: Session, state: CheckState, now: datetime) -> None:
    """Insert or replace one check's state."""
    values = {
        "check_key": state.check_key,
        "anomaly_count": state.anomaly_count,
        "alerting": state.alerting,
        "last_alert_at": state.last_alert_at,
        "last_status": state.last_status,
        "last3": state.last3,
        "updated_at": now,
    }
    statement = insert(WatchdogStateRow).values(**values)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[WatchdogStateRow.check_key],
            set_={k: statement.excluded[k] for k in values if k != "check_key"},
        )
    )


def table_exists(session: Session, name: str) -> bool:
    """Whether a table of that name is visible (later migrations add some)."""
    return bool(session.execute(TABLE_EXISTS, {"name": name}).scalar_one())
