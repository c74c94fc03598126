"""Progress as data on a log line, so a terminal in the same process can draw it.

Flows and tasks log their counts for the Prefect UI anyway. A line that also carries
``extra=progress(label, done, total)`` says "``done`` of ``total``" in a form a listener can
read without parsing text: the ``archivist`` CLI, when it runs a flow in its own process,
attaches a logging handler to the run loggers and moves a progress bar from such lines
(``deployments/progress.py``). Nothing here knows about terminals, and no flow takes a
callback: under a Prefect worker nobody listens, and the line reaches the API like any other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

FIELD = "archivist_progress"


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` units of the work named ``label``; ``note`` says what is current."""

    label: str
    done: int
    total: int
    note: str = ""


def progress(label: str, done: int, total: int, note: str = "") -> dict[str, Progress]:
    """The ``extra=`` of a log call whose line also reports progress."""
    return {FIELD: Progress(label, done, total, note)}


def progress_of(record: logging.LogRecord) -> Progress | None:
    """The progress a log record carries, if it carries any."""
    found = getattr(record, FIELD, None)
    return found if isinstance(found, Progress) else None
