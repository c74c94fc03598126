"""Moments as report headings show them: to the second, with their zone, no microseconds."""

from __future__ import annotations

from datetime import UTC, datetime


def readable(moment: datetime | str) -> str:
    """``2026-11-20 23:30:00 UTC``, or with the moment's own offset (``+01:00``); ISO text
    is read first. A naive moment is taken as UTC; text that is not a moment is kept."""
    if isinstance(moment, str):
        text = moment
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    offset = moment.utcoffset()
    zone = "UTC" if not offset else moment.strftime("%z")
    if zone != "UTC":
        zone = f"{zone[:3]}:{zone[3:]}"
    return f"{moment:%Y-%m-%d %H:%M:%S} {zone}"
