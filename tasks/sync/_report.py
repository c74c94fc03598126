"""The sync run report: returned by the flow, stored with the run, shown as an artifact."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from storage.kernel.shards import Scope
from storage.pseudonyms import Pseudonyms
from tasks.common import readable
from tasks.files import FlushOutcome, md_inline
from tasks.sync._transcripts import IngestReport
from tasks.sync._types import BatchOutcome, SyncPlan


@dataclass
class SyncReport:
    """What one sync run saw, skipped, wrote and touched."""

    flow: str
    as_of: str
    window_start: str
    namespace: str | None
    dry_run: bool
    sessions_seen: int
    skipped_few_user_messages: int
    unchanged: int
    later_state: int
    still_active: int
    written: BatchOutcome
    blocks_appended: int
    blocks_recovered: int
    files_touched: list[str]
    ingest: dict[str, Any] | None = None
    seconds: float = 0.0
    skipped_sessions: list[str] = field(default_factory=list)
    skipped_no_user_message: int = 0
    shard: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def idle(self) -> bool:
        """Nothing was loaded, written or delivered: a pass that found nothing to do."""
        return (
            self.ingest is None
            and self.written.sessions == 0
            and self.blocks_appended == 0
            and self.blocks_recovered == 0
        )

    def markdown(self) -> str:
        w = self.written
        bad = self.ingest["bad_input"] if self.ingest else 0
        empty = self.ingest["empty_content"] if self.ingest else 0
        rows = [
            ("as of", readable(self.as_of)),
            ("window start", readable(self.window_start)),
            ("namespace", self.namespace or "all"),
            ("shard", self.shard or "all"),
            ("dry run", "yes" if self.dry_run else "no"),
            ("sessions seen", self.sessions_seen),
            ("skipped: fewer user messages than the minimum", self.skipped_few_user_messages),
            (
                "skipped: no user message, fewer assistant messages than the minimum",
                self.skipped_no_user_message,
            ),
            ("unchanged (same fingerprint)", self.unchanged),
            ("already processed at a later time", self.later_state),
            ("still active (not idle long enough)", self.still_active),
            ("sessions written", w.sessions),
            (
                "sessions refused by the database (skipped; tried again next run)",
                w.sessions_refused,
            ),
            (
                "memories added / removed / kept",
                f"{w.memories_added} / {w.memories_removed} / {w.memories_kept}",
            ),
            ("episodes", w.episodes),
            (
                "messages without a memory: empty / too short for a turn",
                f"{w.messages_empty} / {w.messages_too_short}",
            ),
            ("task cards", w.task_cards),
            (
                "extractor: calls / fallbacks / tokens in / out",
                f"{w.llm_calls} / {w.extractor_fallbacks} / {w.prompt_tokens} / "
                f"{w.completion_tokens}",
            ),
            ("extractor: values redacted from what it sent", _counts(w.redactions)),
            (
                "blocks appended (of which from an earlier run)",
                f"{self.blocks_appended} ({self.blocks_recovered})",
            ),
            ("files touched", len(self.files_touched)),
            ("bad input lines or files", bad),
            ("messages loaded with empty content", empty),
            ("seconds", f"{self.seconds:.2f}"),
        ]
        lines = [f"# {self.flow} report", "", "| item | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in rows]
        if self.files_touched:
            lines += ["", "## Files touched", ""]
            lines += [f"- `{md_inline(p)}`" for p in self.files_touched]
        if self.ingest and self.ingest["problems"]:
            lines += ["", "## Bad input", ""] + [
                f"- {md_inline(p)}" for p in self.ingest["problems"]
            ]
        return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    """``email 2, phone 1``; never the values, which the report does not have."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v) or "none"


def skipped(plan: SyncPlan) -> list[str]:
    """The skipped sessions a report lists (the first 50)."""
    return list((plan.skipped_few_user_messages + plan.skipped_no_user_message)[:50])


def touched_namespaces(*flushed: FlushOutcome) -> list[str]:
    """The namespaces of the files the run wrote (a file's first path segment)."""
    return sorted({p.split("/", 1)[0] for outcome in flushed for p in outcome.files})


@dataclass(frozen=True)
class SyncWork:
    """What one sync run did after its plan: the batches written, the file blocks delivered
    (those an earlier run left, then this run's), and the transcripts loaded, if any."""

    written: BatchOutcome
    recovered: FlushOutcome
    flushed: FlushOutcome
    ingest: IngestReport | None = None


def build_report(
    flow: str, plan: SyncPlan, scope: Scope, work: SyncWork, started: datetime, names: Pseudonyms
) -> SyncReport:
    """Assemble the report of one run started at ``started`` and ending now; namespaces,
    files and sessions by their pseudonyms (``names``: of the scope's namespace, of
    ``touched_namespaces`` and ``skipped``)."""
    written, recovered, flushed, ingest = work.written, work.recovered, work.flushed, work.ingest
    files = sorted(set(recovered.files) | set(flushed.files))
    return SyncReport(
        flow=flow,
        as_of=plan.as_of.isoformat(),
        window_start=plan.window_start.isoformat(),
        namespace=names.namespace(scope.namespace),
        dry_run=scope.dry_run,
        sessions_seen=plan.seen,
        skipped_few_user_messages=len(plan.skipped_few_user_messages),
        unchanged=len(plan.unchanged),
        later_state=len(plan.later_state),
        still_active=len(plan.still_active),
        written=written,
        blocks_appended=recovered.blocks_appended + flushed.blocks_appended,
        blocks_recovered=recovered.blocks_appended,
        files_touched=[names.path(p) for p in files],
        ingest=ingest.as_dict() if ingest is not None else None,
        seconds=(datetime.now(UTC) - started).total_seconds(),
        skipped_sessions=[names.session(s) for s in skipped(plan)],
        skipped_no_user_message=len(plan.skipped_no_user_message),
        shard=scope.shard_label,
    )
