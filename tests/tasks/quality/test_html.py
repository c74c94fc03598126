"""The quality report's own HTML page: whole without a network, escaped, listed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tasks.quality import CheckOutcome, QualityReport, write_html_report

AT = datetime(2026, 11, 20, 23, 30, tzinfo=UTC)


def report(at: datetime, observed: str) -> QualityReport:
    checks = (
        CheckOutcome(
            "memories",
            "rows",
            "expect_table_row_count",
            critical=False,
            success=True,
            observed="12 rows",
        ),
        CheckOutcome(
            "memories",
            "created_at_not_future",
            "expect_max",
            critical=True,
            success=False,
            observed=observed,
            unexpected_count=1,
            examples=("id 7",),
        ),
    )
    return QualityReport(at, checks, data_docs_uri=None, skipped=("queue: table absent",))


def test_a_run_page_needs_nothing_outside_the_folder(tmp_path: Path) -> None:
    page = write_html_report(report(AT, '<script>alert("x")</script> 1 of 12'), tmp_path)

    text = page.read_text("utf-8")
    assert page.name == "2026-11-20T233000Z.html"
    assert "failed: 1 critical" in text and "Memory quality as of 2026-11-20 23:30 UTC" in text
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "queue: table absent" in text and "id 7" in text and "<style>" in text
    links = re.findall(r'(?:href|src)="([^"]*)"', text)
    assert links == ["index.html"]
    assert not re.search(r"https?://|//cdn|@import|url\(", text)
    assert (tmp_path / "quality" / "latest.html").read_text("utf-8") == text


def test_the_index_lists_every_run_newest_first(tmp_path: Path) -> None:
    first = write_html_report(report(AT, "1 of 12"), tmp_path)
    second = write_html_report(report(AT + timedelta(days=1), "0 of 12"), tmp_path)

    index = (tmp_path / "quality" / "index.html").read_text("utf-8")
    assert re.findall(r'href="([^"]*)"', index) == [second.name, first.name]
    assert "latest" not in index and not list((tmp_path / "quality").glob(".*tmp"))
