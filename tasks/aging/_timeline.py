"""The ``archive`` line of the namespace's ``timeline.jsonl``: one per cold-tier file committed."""

from __future__ import annotations

from datetime import datetime

from storage.archive import ManifestEntry
from tasks.files import timeline_block, utc_iso


def archive_block(entry: ManifestEntry, moved: int, as_of: datetime) -> dict[str, object]:
    """The outbox row of one committed file: how many memories moved, where, when."""
    event = {
        "event": "archive",
        "namespace": entry.namespace,
        "memories": moved,
        "partition": f"namespace={entry.namespace}/year={entry.year}",
        "file": entry.uri,
        "as_of": utc_iso(as_of),
    }
    return timeline_block(entry.namespace, f"archive:{entry.id}", event)
