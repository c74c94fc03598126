"""The quality suites on a real store: a clean store passes, injected bad rows are caught."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage import runs
from storage.kernel.settings import QualitySettings
from storage.pseudonyms import Pseudonyms
from storage.server.engine import Store
from tasks.files import open_memory_root
from tasks.quality import CheckOutcome, QualityReport, check_memory_files, run_quality
from tests.helpers import add_session, chat, pseudonym, run_sync

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
CHECK_AT = AS_OF + timedelta(hours=1)


def seed(store: Store) -> None:
    """Two synced sessions whose memories carry the id of a memory-sync-daily run."""
    for sid, namespace in (("trip", "alice"), ("plan", "bob")):
        add_session(
            store,
            sid,
            namespace,
            chat(
                MORNING,
                "I need to book flights to Lisbon for the conference in March.",
                "TAP flies direct on Friday morning.",
                "Book the TAP flight, and I prefer a window seat.",
                "Done: window seat, Friday 08:40.",
            ),
        )
    run_sync(store, AS_OF)
    with Session(store.engine) as session, session.begin():
        run_id = runs.start_run(session, "memory-sync-daily", AS_OF, {}, None)
        session.execute(text("UPDATE memories SET run_id = :run"), {"run": run_id})


def by_check(report: QualityReport) -> dict[str, CheckOutcome]:
    return {f"{c.suite}.{c.check}": c for c in report.checks}


def execute(store: Store, *statements: str, **params: object) -> None:
    with store.engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement), params)


def one_id(store: Store, where: str = "TRUE") -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text(f"SELECT min(id) FROM memories WHERE {where}")).scalar_one())


def check(store: Store) -> QualityReport:
    return run_quality(store, open_memory_root(store.settings), CHECK_AT)


def test_a_clean_store_passes_every_suite_and_writes_data_docs(store: Store) -> None:
    seed(store)

    report = check(store)

    assert report.success and report.failed == ()
    results = report.suite_results()
    assert set(results) == {
        "memories",
        "episodes",
        "queue",
        "sync_batch",
        "memory_files",
        "documents",
    }
    assert results["memories"] == {"evaluated": 11, "failed": 0, "critical": 0}
    assert all(c.unexpected_count == 0 for c in report.checks if c.unexpected_count is not None)
    index = store.settings.reports_dir / "data_docs" / "index.html"
    assert report.data_docs_uri == index.as_uri() and index.is_file()
    page = index.read_text("utf-8")
    # Static: its lists are in the page, not drawn by scripts from CDNs (blank offline).
    assert "<script" not in page and "http" not in page
    links = re.findall(r'href="([^"]+)"', page)
    shown = [link for link in links if link.startswith("validations/")]
    written = [
        p.relative_to(index.parent).as_posix() for p in index.parent.glob("validations/**/*.html")
    ]
    assert shown and sorted(shown) == sorted(written)  # every result page, listed
    assert all((index.parent / link).is_file() for link in links)
    assert "expectations/memories/rows.html" in links
    assert page.count('class="ok">Succeeded<') == len(shown)


def test_injected_rows_the_schema_allows_are_caught_with_counts(store: Store) -> None:
    seed(store)
    future, moved, bare = one_id(store), one_id(store, "session_id = 'plan'"), one_id(store)
    execute(
        store,
        "UPDATE memories SET created_at = :t, occurred_at = :t WHERE id = :future",
        "UPDATE memories SET namespace = 'mallory' WHERE id = :moved",
        "UPDATE memories SET message_ids = '{}' WHERE id = :bare",
        "UPDATE episodes SET namespace = 'mallory' WHERE session_id = 'plan'",
        "INSERT INTO memory_write_queue (namespace, op, payload, status, attempts, max_attempts,"
        " available_at, claimed_at, created_at, updated_at) VALUES"
        " ('alice', 'ADD_MEMORY', '{}', 'dead', 5, 3, :now, NULL, :now, :now),"
        " ('alice', 'ADD_MEMORY', '{}', 'processing', 1, 3, :now, :stuck, :now, :now)",
        t=CHECK_AT + timedelta(days=1),
        future=future,
        moved=moved,
        bare=bare,
        now=CHECK_AT,
        stuck=CHECK_AT - timedelta(hours=1),
    )
    memory_md = Path(store.settings.memory_root_url) / "alice" / "MEMORY.md"
    memory_md.write_text("".join(f"- line {i}\n" for i in range(200)), "utf-8")

    report = check(store)
    got = by_check(report)
    alice = pseudonym(store, "alice")  # a file is named by its namespace's pseudonym

    expected_failures = {
        "memories.created_at_not_future": (True, 1, f"id {future}"),
        "memories.occurred_at_not_future": (False, 1, f"id {future}"),
        "memories.namespace_matches_session": (True, 1, None),
        "episodes.namespace_matches_session": (True, 1, None),
        "queue.attempts_within_max": (True, 1, None),
        "queue.none_stuck": (False, 1, None),
        "sync_batch.message_ids_not_empty": (True, 1, f"id {bare}"),
        "memory_files.memory_md_max_lines": (False, 1, f"{alice}/MEMORY.md (200)"),
    }
    assert {name for name, c in got.items() if not c.success} == set(expected_failures)
    for name, (critical, count, example) in expected_failures.items():
        assert (got[name].critical, got[name].unexpected_count) == (critical, count), name
        assert example is None or example in got[name].examples, (name, got[name].examples)
    assert not report.success and report.critical_failures == 5
    assert report.suite_results()["memories"] == {"evaluated": 11, "failed": 3, "critical": 2}
    assert "memories.created_at_not_future: 1 of" in report.failure_message()
    assert "[warning] queue.none_stuck" in report.markdown()
    page = (store.settings.reports_dir / "quality" / "latest.html").read_text("utf-8")
    assert "failed: 5 critical" in page and f"{alice}/MEMORY.md (200)" in page
    assert report.html_report is not None and report.html_report in report.failure_message()


def test_corruption_behind_dropped_constraints_is_caught(store: Store) -> None:
    seed(store)
    first, second = one_id(store), one_id(store, "session_id = 'plan'")
    execute(
        store,
        "ALTER TABLE memories DROP CONSTRAINT memories_importance_check,"
        " DROP CONSTRAINT memories_salience_check, DROP CONSTRAINT memories_tier_check,"
        " DROP CONSTRAINT uq_memories_session_id_kind_content_key,"
        " ALTER COLUMN embedding DROP NOT NULL, ALTER COLUMN embedding TYPE vector",
        "ALTER TABLE episodes DROP CONSTRAINT episodes_session_id_fkey,"
        " DROP CONSTRAINT episodes_session_id_key, DROP CONSTRAINT episodes_vehemence_check",
        "UPDATE memories SET importance = 1.5, salience = 0.001, tier = 'bogus' WHERE id = :a",
        "UPDATE memories SET embedding = NULL WHERE id = :b",
        "UPDATE memories SET embedding = '[1,2,3]' WHERE id = :a",
        "INSERT INTO memories (namespace, kind, content, content_key, embedding, embedding_model,"
        " session_id, occurred_at, created_at) SELECT namespace, kind, content, content_key,"
        " embedding, embedding_model, session_id, occurred_at, created_at FROM memories"
        " WHERE id = :b",
        "UPDATE episodes SET session_id = 'ghost', vehemence = -0.5 WHERE session_id = 'trip'",
        "INSERT INTO episodes SELECT (SELECT max(id) + 1 FROM episodes), namespace, 'plan',"
        " NULL, summary, topics, entities, user_state, outcomes, open_threads, importance,"
        " vehemence, urgency, sentiment, risk, message_count, started_at, ended_at,"
        " fingerprint, extractor, run_id, salience, last_accessed_at, created_at, updated_at"
        " FROM episodes WHERE session_id = 'plan'",
        a=first,
        b=second,
    )

    got = by_check(check(store))

    failed = {name: c.unexpected_count for name, c in got.items() if not c.success}
    assert failed == {
        "memories.embedding_present": 2,  # the NULL one and its copy
        "memories.embedding_dimension": 1,
        "memories.importance_in_0_1": 1,
        "memories.salience_at_least_0_01": 1,
        "memories.tier_allowed": 1,
        "memories.one_per_session_kind_content_key": 2,
        "episodes.vehemence_in_0_1": 1,
        "episodes.one_per_session": 2,
        "episodes.session_exists": 1,
        "sync_batch.embedding_present": 1,
    }
    assert f"id {first}" in got["memories.tier_allowed"].examples


def test_references_to_a_memory_that_is_gone_are_caught(store: Store) -> None:
    seed(store)
    gone = one_id(store, "id = (SELECT memory_id FROM episodes WHERE session_id = 'plan')")
    execute(
        store,
        # The access log is a history: a search that returned the memory is no lost link.
        "INSERT INTO memory_access_log (memory_ids, namespace, accessed_at)"
        " VALUES (ARRAY[:gone, :kept], 'alice', :now)",
        "ALTER TABLE memories DISABLE TRIGGER memories_gone",  # what clears them on delete
        "DELETE FROM memories WHERE id = :gone",
        gone=gone,
        kept=one_id(store, "session_id = 'trip'"),
        now=CHECK_AT,
    )

    got = by_check(check(store))

    failed = {name: c.unexpected_count for name, c in got.items() if not c.success}
    assert failed == {"memories.references_point_at_memories": 1}  # the episode


def test_the_queue_suite_is_skipped_when_its_table_is_absent(store: Store) -> None:
    execute(store, "DROP TABLE memory_write_queue CASCADE")

    report = check(store)

    assert report.success
    assert report.skipped == ("queue: table memory_write_queue absent",)
    assert "queue" not in report.suite_results()
    assert "queue: table memory_write_queue absent" in report.markdown()


def test_memory_files_within_caps_pass_and_an_empty_root_passes(store: Store) -> None:
    root = open_memory_root(store.settings)
    assert all(
        c.success and c.unexpected_count == 0
        for c in check_memory_files(root, store.settings.tidy, 5, Pseudonyms())
    )
    folder = Path(store.settings.memory_root_url) / "bob"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Memory\n- likes tea\n", "utf-8")
    (folder / "NOTES.md").write_text("x" * 100_000, "utf-8")  # not a MEMORY.md: ignored

    outcomes = check_memory_files(root, store.settings.tidy, 5, Pseudonyms())

    assert [(c.check, c.success, c.observed) for c in outcomes] == [
        ("memory_md_max_lines", True, "0 of 1 files over 80"),
        ("memory_md_max_bytes", True, "0 of 1 files over 5120"),
    ]


def test_a_memory_file_over_a_cap_is_named_by_its_namespace_pseudonym(store: Store) -> None:
    folder = Path(store.settings.memory_root_url) / "ns-zebrafog"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- a line\n" * 100, "utf-8")

    report = check(store)

    (lines,) = [c for c in report.checks if c.check == "memory_md_max_lines"]
    label = pseudonym(store, "ns-zebrafog")
    assert not lines.success and lines.examples == (f"{label}/MEMORY.md (100)",)
    assert "zebrafog" not in report.markdown()


def test_quality_settings_refuse_the_builtin_site_name() -> None:
    with pytest.raises(ValueError, match="local_site"):
        QualitySettings(site_name="local_site")
    assert json.loads(QualitySettings().model_dump_json())["site_name"] == "archivist_site"


def test_document_chunks_are_checked(store: Store, tmp_path: Path) -> None:
    from tests.tasks.documents.test_ingest import ingest, write_samples

    seed(store)
    write_samples(tmp_path / "kb")
    ingest(store, str(tmp_path / "kb"), at=MORNING)
    assert by_check(check(store))["documents.text_not_empty"].success
    with store.engine.connect() as conn:
        first, second, third = conn.execute(
            text("SELECT id FROM document_chunks ORDER BY id LIMIT 3")
        ).scalars()
    execute(
        store,
        "ALTER TABLE document_chunks DROP CONSTRAINT IF EXISTS document_chunks_importance_check",
        "UPDATE document_chunks SET char_end = char_end + 100000 WHERE id = :first",
        "UPDATE document_chunks SET text = ' ' WHERE id = :second",
        "UPDATE document_chunks SET importance = 1.5 WHERE id = :third",
        first=first,
        second=second,
        third=third,
    )
    got = by_check(check(store))
    failed = {name for name, c in got.items() if not c.success}
    assert failed == {
        "documents.span_within_document_and_equal_to_text",
        "documents.text_not_empty",
        "documents.importance_in_0_1",
    }
    assert got["documents.span_within_document_and_equal_to_text"].unexpected_count == 2
    assert f"id {second}" in got["documents.text_not_empty"].examples


def test_an_empty_table_is_said_to_have_no_rows_to_check(store: Store) -> None:
    report = check(store)  # a new store: every table empty

    observed = {f"{c.suite}.{c.check}": c.observed for c in report.checks}
    assert report.success
    assert observed["memories.embedding_present"] == "no rows to check"
    assert not [o for o in observed.values() if o.startswith("None") or " of 0 rows" in o]
