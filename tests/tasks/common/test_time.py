"""Report headings: moments to the second with their zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tasks.common import readable
from tasks.quality import QualityReport


def test_moments_read_to_the_second_with_their_zone() -> None:
    at = datetime(2026, 11, 20, 23, 30, 5, 123456, tzinfo=UTC)
    assert readable(at) == "2026-11-20 23:30:05 UTC"
    assert readable(at.isoformat()) == "2026-11-20 23:30:05 UTC"
    paris = at.astimezone(timezone(timedelta(hours=1)))
    assert readable(paris) == "2026-11-21 00:30:05 +01:00"
    assert readable(datetime(2026, 11, 20, 8, 0)) == "2026-11-20 08:00:00 UTC"
    assert readable("not a moment") == "not a moment"


def test_report_headings_show_no_microseconds() -> None:
    at = datetime(2026, 11, 20, 23, 30, 5, 123456, tzinfo=UTC)
    quality = QualityReport(at, (), data_docs_uri=None).markdown()
    assert quality.startswith("# Memory quality as of 2026-11-20 23:30:05 UTC: passed")
    assert "123456" not in quality
