"""The ``tidy`` line of the namespace's ``timeline.jsonl``: counts of one tidy, never text."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import date, datetime

from tasks.files import timeline_block, utc_iso


def tidy_block(
    namespace: str, week: date, counts: Mapping[str, int], as_of: datetime, run_id: uuid.UUID | None
) -> dict[str, object]:
    """The outbox row of one namespace's tidy, keyed by namespace and ``as_of``, so a retry
    of the same run adds no second line."""
    event = {
        "event": "tidy",
        "namespace": namespace,
        "week": week.isoformat(),
        **counts,
        "run": None if run_id is None else str(run_id),
        "as_of": utc_iso(as_of),
    }
    key = f"tidy:{namespace}@{utc_iso(as_of)}"
    return timeline_block(namespace, key, event, run_id=run_id)
