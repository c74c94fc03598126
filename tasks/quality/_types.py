"""The outcome of a quality run: one result per expectation, summaries, artifact rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tasks.common import readable


@dataclass(frozen=True)
class CheckOutcome:
    """One evaluated expectation (a GX one, or a plain file check recorded the same way)."""

    suite: str
    check: str
    expectation: str
    critical: bool
    success: bool
    observed: str
    unexpected_count: int | None = None
    examples: tuple[str, ...] = ()

    def row(self) -> dict[str, Any]:
        """One row of the Prefect table artifact: four narrow columns that fit the page;
        the expectation's name and the examples are on the run's HTML page."""
        if self.success:
            result = "ok"
        else:
            result = "CRITICAL" if self.critical else "warning"
        return {
            "check": f"{self.suite}.{self.check}",
            "result": result,
            "unexpected": self.unexpected_count,
            "observed": self.observed,
        }

    def line(self) -> str:
        examples = f" (e.g. {', '.join(self.examples)})" if self.examples else ""
        return f"{self.suite}.{self.check}: {self.observed}{examples}"


@dataclass(frozen=True)
class QualityReport:
    """Every check of one run, where its Data Docs are, and what was not checked."""

    as_of: datetime
    checks: tuple[CheckOutcome, ...]
    data_docs_uri: str | None
    skipped: tuple[str, ...] = field(default=())
    html_report: str | None = None  # the self-contained page (``tasks.quality._html``)

    @property
    def failed(self) -> tuple[CheckOutcome, ...]:
        return tuple(c for c in self.checks if not c.success)

    @property
    def critical_failures(self) -> int:
        return sum(1 for c in self.failed if c.critical)

    @property
    def success(self) -> bool:
        return self.critical_failures == 0

    def suite_results(self) -> dict[str, dict[str, int]]:
        """Per suite: expectations evaluated, failed, and failed while critical."""
        results: dict[str, dict[str, int]] = {}
        for check in self.checks:
            counts = results.setdefault(check.suite, {"evaluated": 0, "failed": 0, "critical": 0})
            counts["evaluated"] += 1
            counts["failed"] += 0 if check.success else 1
            counts["critical"] += 0 if check.success or not check.critical else 1
        return results

    def table(self) -> list[dict[str, Any]]:
        return [check.row() for check in self.checks]

    def markdown(self) -> str:
        """The summary artifact: verdict, per-suite counts, failures, where the HTML is."""
        verdict = "passed" if self.success else f"FAILED ({self.critical_failures} critical)"
        lines = [f"# Memory quality as of {readable(self.as_of)}: {verdict}", ""]
        lines += ["| suite | evaluated | failed | critical failed |", "| --- | --- | --- | --- |"]
        for suite, c in self.suite_results().items():
            lines.append(f"| {suite} | {c['evaluated']} | {c['failed']} | {c['critical']} |")
        if self.failed:
            lines += ["", "## Failed expectations", ""]
            lines += [
                f"- [{'critical' if c.critical else 'warning'}] {c.line()}" for c in self.failed
            ]
        if self.skipped:
            lines += ["", "## Not checked", ""] + [f"- {reason}" for reason in self.skipped]
        lines += ["", f"Report, readable offline: {self.html_report or 'not written'}"]
        lines += ["", f"Data Docs: {self.data_docs_uri or 'not built'}"]
        return "\n".join(lines)

    def failure_message(self) -> str:
        """What a DataQualityError says: the critical failures with counts and examples."""
        critical = [c.line() for c in self.failed if c.critical]
        return (
            f"{len(critical)} critical data-quality expectation(s) failed as of "
            f"{readable(self.as_of)}: "
            + "; ".join(critical)
            + f". Details: {self.html_report or 'the memory-quality-report artifact'}"
        )
