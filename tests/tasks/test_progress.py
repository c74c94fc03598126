"""Progress travels on a log record as data, and a plain record carries none."""

from __future__ import annotations

import logging

import pytest

from tasks.progress import Progress, progress, progress_of


def test_a_listener_reads_the_progress_a_log_line_carries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("tests.progress")
    with caplog.at_level(logging.INFO, logger="tests.progress"):
        logger.info("batch %d/%d", 2, 3, extra=progress("sessions processed", 4, 5))
        logger.info("no counts here")

    carried, plain = caplog.records
    assert carried.getMessage() == "batch 2/3"
    assert progress_of(carried) == Progress("sessions processed", 4, 5)
    assert progress_of(plain) is None
