"""What ``memory-quality-report`` expects of the store: suites as plain data, no GX import.

Each suite validates one or more query assets (a ``SELECT`` over the store with an ``id``
column); each expectation names a Great Expectations class, its arguments, and whether a
failure is critical (fails the run) or a warning. Queries are constant: ``as_of`` and the
thresholds travel as expectation arguments, which GX binds as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from storage.kernel.settings import Settings
from storage.kernel.tiers import TIERS

SYNC_FLOW = "memory-sync-daily"
QUEUE_STATUSES = ("pending", "processing", "completed", "dead")

MEMORY_ROWS = """
SELECT id, vector_dims(embedding) AS embedding_dims, importance, vehemence, salience, tier,
       created_at, occurred_at
FROM memories
"""
SESSION_MEMORY_KEYS = """
SELECT id, session_id, kind, content_key FROM memories WHERE session_id IS NOT NULL
"""
MEMORY_NAMESPACE_MISMATCH = """
SELECT m.id, m.namespace, s.namespace AS session_namespace
FROM memories m JOIN chat_sessions s ON s.id = m.session_id
WHERE m.namespace <> s.namespace
"""
# Rows that name a memory which is gone. Deleting a memory clears these references in the
# same statement (migration 0009's trigger), so any row here is a lost link. The access
# log is not checked: it is a history, whose ids may name memories since gone (0020).
DANGLING_MEMORY_REFERENCES = """
SELECT 'episodes:' || e.id AS id, e.memory_id FROM episodes e
WHERE e.memory_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.memory_id)
UNION ALL
SELECT 'long_term_entries:' || t.namespace || '/' || t.entry_key, t.memory_id
FROM long_term_entries t
WHERE t.memory_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)
"""
EPISODE_ROWS = "SELECT id, session_id, importance, vehemence FROM episodes"
ORPHAN_EPISODES = """
SELECT e.id, e.session_id FROM episodes e
LEFT JOIN chat_sessions s ON s.id = e.session_id
WHERE s.id IS NULL
"""
EPISODE_NAMESPACE_MISMATCH = """
SELECT e.id, e.namespace, s.namespace AS session_namespace
FROM episodes e JOIN chat_sessions s ON s.id = e.session_id
WHERE e.namespace <> s.namespace
"""
QUEUE_ROWS = "SELECT id, status, attempts, max_attempts FROM memory_write_queue"
QUEUE_PROCESSING = """
SELECT id, claimed_at FROM memory_write_queue WHERE status = 'processing'
"""
# The memories the newest daily sync run added (kept ones keep the run id that wrote them).
LATEST_SYNC_BATCH = """
SELECT m.id, vector_dims(m.embedding) AS embedding_dims,
       char_length(btrim(m.content, E' \\t\\r\\n')) AS content_chars,
       cardinality(m.message_ids) AS message_id_count
FROM memories m
WHERE m.run_id = (
    SELECT r.id FROM runs r WHERE r.flow = 'memory-sync-daily'
    ORDER BY r.started_at DESC LIMIT 1
)
"""
# Document chunks: vector, text, importance, time; each span inside its document's text
# and equal to the chunk's text; the namespace of its document.
CHUNK_ROWS = """
SELECT c.id, vector_dims(c.embedding) AS embedding_dims,
       char_length(btrim(c.text, E' \\t\\r\\n')) AS text_chars, c.importance, c.created_at
FROM document_chunks c
"""
CHUNK_BAD_SPANS = """
SELECT c.id, c.document_id, c.char_start, c.char_end FROM document_chunks c
JOIN documents d ON d.id = c.document_id
WHERE c.char_start < 0 OR c.char_end <= c.char_start OR c.char_end > char_length(d.text)
   OR substr(d.text, c.char_start + 1, c.char_end - c.char_start) <> c.text
   OR c.namespace <> d.namespace
"""


@dataclass(frozen=True)
class ExpectationSpec:
    """One expectation: its check name, GX class, arguments and severity."""

    check: str
    gx_class: str
    kwargs: Mapping[str, Any]
    critical: bool = True


@dataclass(frozen=True)
class AssetSpec:
    """A query over the store and the expectations its rows must meet (one GX suite)."""

    suite: str
    name: str
    query: str
    expectations: tuple[ExpectationSpec, ...]
    requires_table: str | None = field(default=None)

    @property
    def gx_suite(self) -> str:
        return f"{self.suite}.{self.name}"


def _between(
    check: str, column: str, low: Any, high: Any, *, critical: bool = True
) -> ExpectationSpec:
    kwargs = {"column": column, "min_value": low, "max_value": high}
    return ExpectationSpec(check, "ExpectColumnValuesToBeBetween", kwargs, critical)


def _no_rows(check: str) -> ExpectationSpec:
    return ExpectationSpec(check, "ExpectTableRowCountToEqual", {"value": 0})


def _not_null(check: str, column: str) -> ExpectationSpec:
    return ExpectationSpec(check, "ExpectColumnValuesToNotBeNull", {"column": column})


def _in_set(check: str, column: str, values: tuple[Any, ...]) -> ExpectationSpec:
    kwargs = {"column": column, "value_set": list(values)}
    return ExpectationSpec(check, "ExpectColumnValuesToBeInSet", kwargs)


def memory_assets(settings: Settings, as_of: datetime) -> tuple[AssetSpec, ...]:
    """Every memory: vector, scores, tier, times; uniqueness; namespace of its session; no
    episode, access-log row or long-term entry pointing at a memory that is gone."""
    rows = (
        _not_null("embedding_present", "embedding_dims"),
        _in_set("embedding_dimension", "embedding_dims", (settings.embedding.dim,)),
        _between("importance_in_0_1", "importance", 0, 1),
        _between("vehemence_in_0_1", "vehemence", 0, 1),
        _between("salience_at_least_0_01", "salience", 0.01, None),
        _in_set("tier_allowed", "tier", TIERS),
        _between("created_at_not_future", "created_at", None, as_of),
        # occurred_at comes from the clients' clocks: worth a look, not a failed run.
        _between("occurred_at_not_future", "occurred_at", None, as_of, critical=False),
    )
    unique = ExpectationSpec(
        "one_per_session_kind_content_key",
        "ExpectCompoundColumnsToBeUnique",
        {"column_list": ["session_id", "kind", "content_key"]},
    )
    return (
        AssetSpec("memories", "rows", MEMORY_ROWS, rows),
        AssetSpec("memories", "session_keys", SESSION_MEMORY_KEYS, (unique,)),
        AssetSpec(
            "memories",
            "namespace_mismatch",
            MEMORY_NAMESPACE_MISMATCH,
            (_no_rows("namespace_matches_session"),),
        ),
        AssetSpec(
            "memories",
            "dangling_references",
            DANGLING_MEMORY_REFERENCES,
            (_no_rows("references_point_at_memories"),),
            requires_table="long_term_entries",
        ),
    )


def episode_assets() -> tuple[AssetSpec, ...]:
    """Every episode: scores in range, one per session, its session exists and agrees."""
    rows = (
        _between("importance_in_0_1", "importance", 0, 1),
        _between("vehemence_in_0_1", "vehemence", 0, 1),
        ExpectationSpec(
            "one_per_session", "ExpectColumnValuesToBeUnique", {"column": "session_id"}
        ),
    )
    return (
        AssetSpec("episodes", "rows", EPISODE_ROWS, rows),
        AssetSpec("episodes", "orphans", ORPHAN_EPISODES, (_no_rows("session_exists"),)),
        AssetSpec(
            "episodes",
            "namespace_mismatch",
            EPISODE_NAMESPACE_MISMATCH,
            (_no_rows("namespace_matches_session"),),
        ),
    )


def queue_assets(settings: Settings, as_of: datetime) -> tuple[AssetSpec, ...]:
    """The write queue (when migrated): statuses, attempts, nothing stuck in processing."""
    attempts = ExpectationSpec(
        "attempts_within_max",
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {"column_A": "max_attempts", "column_B": "attempts", "or_equal": True},
    )
    stuck_before = as_of - timedelta(seconds=settings.queue.stuck_after_seconds)
    return (
        AssetSpec(
            "queue",
            "rows",
            QUEUE_ROWS,
            (_in_set("status_allowed", "status", QUEUE_STATUSES), attempts),
            requires_table="memory_write_queue",
        ),
        AssetSpec(
            "queue",
            "processing",
            QUEUE_PROCESSING,
            (_between("none_stuck", "claimed_at", stuck_before, None, critical=False),),
            requires_table="memory_write_queue",
        ),
    )


def sync_batch_assets() -> tuple[AssetSpec, ...]:
    """The memories the latest daily sync run wrote: embedded, with text and sources."""
    rows = (
        _not_null("embedding_present", "embedding_dims"),
        _between("content_not_empty", "content_chars", 1, None),
        _between("message_ids_not_empty", "message_id_count", 1, None),
    )
    return (AssetSpec("sync_batch", "latest", LATEST_SYNC_BATCH, rows),)


def document_assets(settings: Settings, as_of: datetime) -> tuple[AssetSpec, ...]:
    """Every document chunk: embedded at the store's size, with text, importance in [0, 1],
    not from the future; its span inside its document and equal to its text."""
    rows = (
        _not_null("embedding_present", "embedding_dims"),
        _in_set("embedding_dimension", "embedding_dims", (settings.embedding.dim,)),
        _between("text_not_empty", "text_chars", 1, None),
        _between("importance_in_0_1", "importance", 0, 1),
        _between("created_at_not_future", "created_at", None, as_of),
    )
    spans = (_no_rows("span_within_document_and_equal_to_text"),)
    return (
        AssetSpec("documents", "chunks", CHUNK_ROWS, rows, requires_table="document_chunks"),
        AssetSpec("documents", "spans", CHUNK_BAD_SPANS, spans, requires_table="document_chunks"),
    )


def all_assets(settings: Settings, as_of: datetime) -> tuple[AssetSpec, ...]:
    """Every query asset of every database suite, in report order."""
    return (
        *memory_assets(settings, as_of),
        *episode_assets(),
        *queue_assets(settings, as_of),
        *sync_batch_assets(),
        *document_assets(settings, as_of),
    )
