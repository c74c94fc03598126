"""The weekly tidy's run report: returned by the flow, stored with the run, an artifact."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from storage.pseudonyms import Pseudonyms
from tasks.common import readable
from tasks.tidy._namespace import NamespaceOutcome, TidyContext

SHOWN = 20


@dataclass
class TidyReport:
    """What one tidy run selected, wrote and moved, per namespace: each namespace (and the
    ``namespace`` parameter) by its pseudonym, the files by paths under it."""

    flow: str
    as_of: str
    week: str
    window_start: str
    namespace: str | None
    dry_run: bool
    max_lines: int
    max_bytes: int
    namespaces: list[NamespaceOutcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def entered(self) -> int:
        return sum(len(n.entered) for n in self.namespaces)

    @property
    def left(self) -> int:
        return sum(len(n.left) for n in self.namespaces)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for item in out["namespaces"]:
            item["entered"], item["left"] = item["entered"][:SHOWN], item["left"][:SHOWN]
        return out | {"entered": self.entered, "left": self.left}

    def markdown(self) -> str:
        rows = [
            ("as of", readable(self.as_of)),
            ("week (Monday)", self.week),
            ("window start", readable(self.window_start)),
            ("namespace", self.namespace or "all"),
            ("dry run", "yes" if self.dry_run else "no"),
            ("caps", f"{self.max_lines} lines / {self.max_bytes} bytes"),
            ("namespaces", len(self.namespaces)),
            ("entries entered / left", f"{self.entered} / {self.left}"),
            ("seconds", f"{self.seconds:.2f}"),
        ]
        lines = [f"# {self.flow} report", "", "| item | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in rows]
        for outcome in self.namespaces:
            lines += self._namespace(outcome)
        return "\n".join(lines)

    def _namespace(self, n: NamespaceOutcome) -> list[str]:
        lines = [
            "",
            f"## {n.namespace}",
            "",
            f"- MEMORY.md: {n.memory_md}; {n.lines}/{self.max_lines} lines, "
            f"{n.bytes}/{self.max_bytes} bytes",
            f"- candidates {n.candidates}; entered {len(n.entered)}, left {len(n.left)}, "
            f"kept {n.kept}; embedded {n.embedded}",
            f"- weekly summary: {n.weekly_file or 'none (no episodes this week)'}",
            f"- logs moved to the archive: {len(n.logs_moved)}",
        ]
        lines += _sources("Entered", n.entered) + _sources("Left", n.left)
        return lines


def _sources(title: str, entries: Sequence[tuple[int, ...]]) -> list[str]:
    """Entries by the memories merged into them; their text is in MEMORY.md only."""
    if not entries:
        return []
    more = [f"- … and {len(entries) - SHOWN} more"] if len(entries) > SHOWN else []
    shown = [f"- memories {', '.join(f'#{i}' for i in ids)}" for ids in entries[:SHOWN]]
    return ["", f"{title} (by source memory):", ""] + shown + more


def build_report(
    flow: str,
    ctx: TidyContext,
    namespace: str | None,
    outcomes: Sequence[NamespaceOutcome],
    started: datetime,
    names: Pseudonyms,
) -> TidyReport:
    """Assemble the report of one run started at ``started`` and ending now, in
    pseudonyms (``names``)."""
    finished = datetime.now(UTC)
    return TidyReport(
        flow=flow,
        as_of=ctx.as_of.isoformat(),
        week=ctx.monday.isoformat(),
        window_start=ctx.window[0].isoformat(),
        namespace=names.namespace(namespace),
        dry_run=ctx.dry_run,
        max_lines=ctx.caps.max_lines,
        max_bytes=ctx.caps.max_bytes,
        namespaces=[_pseudonymous(o, names) for o in outcomes],
        seconds=(finished - started).total_seconds(),
    )


def _pseudonymous(outcome: NamespaceOutcome, names: Pseudonyms) -> NamespaceOutcome:
    weekly = outcome.weekly_file
    return replace(
        outcome,
        namespace=names.namespaces[outcome.namespace],
        weekly_file=None if weekly is None else names.path(weekly),
        logs_moved=[names.path(p) for p in outcome.logs_moved],
    )
