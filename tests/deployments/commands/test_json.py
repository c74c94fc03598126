"""``--json`` on search, prime and status: one JSON document with what the text shows."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from prefect.settings import PREFECT_API_URL, temporary_settings
from sqlalchemy import text
from sqlalchemy.orm import Session

from deployments.cli import main
from storage.kernel.settings import Settings
from storage.quality_runs import QualityRunRecord, record_quality_run
from storage.server.engine import open_store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def run_json(args: list[str]) -> Any:
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_search_json_has_each_hit_with_provenance_and_factors(env: Settings) -> None:
    [dentist, _] = put(
        open_store(env), "alice", ["Dentist appointment moved to Tuesday 9am", "Buy oat milk"], NOW
    )
    args = ["search", "alice", "dentist appointment", "--limit", "1", "--as-of", "2026-11-20"]

    plain = run_json(args)
    explained = run_json([*args, "--explain"])

    [hit] = plain["hits"]
    assert plain["namespace"] == "alice" and plain["query"] == "dentist appointment"
    assert hit["memory_id"] == dentist and hit["kind"] == "fact"
    assert hit["content"] == "Dentist appointment moved to Tuesday 9am"
    assert hit["occurred_at"] == NOW.isoformat() and hit["session_id"] is None
    assert hit["message_ids"] == ["m0"] and isinstance(hit["created_at"], str)
    assert 0 < hit["score"] <= 1 and "factors" not in hit
    assert hit["label"] == "[Memory 1]" and list(hit)[0] == "label"
    assert plain["sources"] == (
        f"Sources: [Memory 1] memory {dentist} (messages m0, 2026-11-20 12:00 UTC)"
    )
    [why] = explained["hits"]
    assert why["weights"]["semantic"] == 1.0 and 0 < why["factors"]["semantic"] <= 1
    assert why["explain"].startswith(f"{why['score']:.3f} from 1*semantic(")
    # The time window a question names, in each hit's factors and breakdown (as the HTTP API
    # and MCP show them).
    [dated] = run_json([*args[:2], "dentist appointment today", *args[3:], "--explain"])["hits"]
    assert dated["weights"]["window"] == 0.5 and dated["factors"]["window"] == 1.0
    assert 'window "today": 2026-11-20' in dated["explain"]


def test_search_json_with_no_hits_is_an_empty_list(env: Settings) -> None:
    assert run_json(["search", "alice", "anything"]) == {
        "namespace": "alice",
        "query": "anything",
        "hits": [],
        "sources": "",
    }


def test_prime_json_has_the_parts_and_the_text(env: Settings) -> None:
    [seat] = put(open_store(env), "alice", ["I prefer a window seat"], NOW, kind="preference")

    primed = run_json(["prime", "alice", "booking a flight"])

    assert primed["namespace"] == "alice"
    assert "Things I know:" in primed["formatted"] and "window seat" in primed["formatted"]
    assert [(f["label"], f["memory_id"]) for f in primed["facts"]] == [("[Memory 1]", seat)]
    assert "- [Memory 1] I prefer a window seat" in primed["formatted"]
    assert primed["sources"] == (
        f"Sources: [Memory 1] memory {seat} (messages m0, 2026-11-20 12:00 UTC)"
    )
    assert primed["formatted"].endswith("\n\n" + primed["sources"])
    assert primed["episodes"] == [] and primed["open_threads"] == []


def test_status_json_has_every_section(
    env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with socket.socket() as probe:  # a port where no local Prefect server answers
        probe.bind(("127.0.0.1", 0))
        monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(probe.getsockname()[1]))
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    store = open_store(env)
    put(store, "alice", ["one", "two"], NOW)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO memory_write_queue (namespace, op, payload, status, attempts,"
                " max_attempts, available_at, created_at, updated_at) VALUES"
                " ('alice', 'ADD_MEMORY', '{}', 'pending', 0, 3, :t, :t, :t),"
                " ('alice', 'ADD_MEMORY', '{}', 'dead', 3, 3, :t, :t, :t)"
            ),
            {"t": NOW - timedelta(minutes=30)},
        )
    with Session(store.engine) as session, session.begin():
        suites = {"memories": {"evaluated": 12, "failed": 1, "critical": 0}}
        record_quality_run(
            session,
            QualityRunRecord(
                NOW,
                suites,
                success=True,
                critical_failures=0,
                data_docs_uri="file:///docs",
                flow_run_id=None,
            ),
        )

    with temporary_settings(updates={PREFECT_API_URL: None}):  # a session harness may be up
        status = run_json(["status"])

    assert "no Prefect server answers" in status["prefect"]["unavailable"]
    assert status["prefect_api"]["configured"] is False
    assert set(status["prefect_api"]) == {"url", "configured", "reachable", "problem"}
    assert status["runs"] == {"last": [], "crashed": None}
    assert status["queue"] == {
        "by_status": {"dead": 1, "pending": 1},
        "oldest_pending": (NOW - timedelta(minutes=30)).isoformat(),
        "dead": 1,
    }
    assert status["memories"]["namespaces"] == {"alice": {"fresh": 2}}
    assert status["memories"]["totals"]["fresh"] == 2
    quality = status["quality"]
    assert quality["success"] is True and quality["critical_failures"] == 0
    assert quality["suite_results"] == suites and quality["data_docs_uri"] == "file:///docs"
    assert quality["as_of"] == NOW.isoformat()
