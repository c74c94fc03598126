"""A notice to an operator: an alert, reminder, recovery or flow failure, as text and JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

NoticeKind = Literal["alert", "reminder", "recovery", "failure"]
_ICONS = {"alert": ":rotating_light:", "reminder": ":bell:", "recovery": ":white_check_mark:"}


@dataclass(frozen=True)
class Notice:
    """One message to an operator, as text for humans and fields for machines."""

    kind: NoticeKind
    check: str
    status: str
    summary: str
    at: datetime
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    anomaly_count: int = 0

    def text(self) -> str:
        icon = _ICONS.get(self.kind, ":x:")
        title = {
            "alert": "anomaly",
            "reminder": "still anomalous",
            "recovery": "recovered",
            "failure": "flow run failed",
        }[self.kind]
        count = f" ({self.anomaly_count} consecutive)" if self.anomaly_count else ""
        return f"{icon} Archivist {title}: {self.check}{count}: {self.summary}"

    def payload(self) -> dict[str, Any]:
        """Slack-compatible JSON (``text``) plus structured fields."""
        return {
            "text": self.text(),
            "kind": self.kind,
            "check": self.check,
            "status": self.status,
            "summary": self.summary,
            "at": self.at.isoformat(),
            "anomaly_count": self.anomaly_count,
            "snapshots": self.snapshots,
        }
