"""``archivist eval`` as a user runs it: click's runner on a real, empty test store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.commands.eval import eval_command
from storage.kernel.settings import Settings
from storage.server.engine import Store
from tests.helpers import add_session, chat, final_bar

DATA = Path(__file__).parents[2] / "data" / "eval"
SESSIONS, QUERIES = str(DATA / "sessions.jsonl"), str(DATA / "queries.jsonl")


@pytest.fixture
def eval_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Point ``Settings()`` at this test's store (the env part of ``flow_env``, no Prefect)."""
    assert settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("ARCHIVIST_MEMORY_ROOT", settings.memory_root_url)
    monkeypatch.setenv("ARCHIVIST_TIMEZONE", settings.timezone)
    return settings


def test_eval_prints_the_table_and_writes_json(eval_env: Settings, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"

    result = CliRunner().invoke(
        eval_command, [SESSIONS, QUERIES, "--preset", "librarian", "--json", str(out)]
    )

    assert result.exit_code == 0, result.output
    assert "11 sessions, 49 messages, 23 questions; 0 problems" in result.output
    assert "min_user_messages=1" in result.output
    assert "preset librarian (semantic=0.4, recency=0.25" in result.output
    assert "R@1    R@5   R@10    MRR" in result.output
    assert "cross-namespace leaks: 0" in result.output
    assert "p50" in result.output and "p95" in result.output
    report = json.loads(out.read_text())
    assert report["preset"] == "librarian" and report["ks"] == [1, 5, 10]
    overall = report["summary"]["overall"]
    assert overall["questions"] == 23 and overall["cross_namespace_leaks"] == 0
    assert 0 <= overall["messages"]["recall@1"] <= overall["messages"]["recall@10"] <= 1
    assert len(report["questions"]) == 23 and report["problems"] == []
    assert not Path(eval_env.memory_root_url).exists()  # no memory files written


def test_bad_lines_are_reported_and_the_rest_evaluated(eval_env: Settings, tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    good = (DATA / "queries.jsonl").read_text().splitlines()[0]
    queries.write_text(f"{good}\n{{oops\n")

    result = CliRunner().invoke(eval_command, [SESSIONS, str(queries), "--k", "3,1", "--json", "-"])

    assert result.exit_code == 0, result.output
    assert f"{queries}:2: not valid JSON; line skipped" in result.output
    assert "1 questions; 1 problems" in result.output
    assert '"ks": [\n    1,\n    3\n  ]' in result.output


def test_refuses_sessions_stored_under_another_namespace(eval_env: Settings, store: Store) -> None:
    add_session(store, "a1", "bob", chat(datetime(2026, 11, 1, tzinfo=UTC), "Hello there, bob."))

    result = CliRunner().invoke(eval_command, [SESSIONS, QUERIES])

    assert result.exit_code == 1
    assert "a1 (stored in 'bob', labelled 'alice')" in result.output
    assert "scratch store" in result.output


def test_bad_cut_offs_are_a_usage_error(eval_env: Settings) -> None:
    result = CliRunner().invoke(eval_command, [SESSIONS, QUERIES, "--k", "0,5"])
    assert result.exit_code == 2
    assert "give cut-offs of 1 or more" in result.output


def test_refuses_namespaces_that_hold_other_data_unless_allowed(
    eval_env: Settings, store: Store
) -> None:
    day = datetime(2026, 11, 1, tzinfo=UTC)
    add_session(store, "demo-1", "alice", chat(day, "I like my tea green.", "Noted."))

    refused = CliRunner().invoke(eval_command, [SESSIONS, QUERIES])
    allowed = CliRunner().invoke(eval_command, [SESSIONS, QUERIES, "--allow-existing"])
    again = CliRunner().invoke(eval_command, [SESSIONS, QUERIES, "--allow-existing"])

    assert refused.exit_code == 1
    assert "already holds other data in the labelled namespaces alice (1 rows)" in refused.output
    assert "--allow-existing" in refused.output
    assert allowed.exit_code == 0 and "23 questions" in allowed.output
    assert again.exit_code == 0 and "(the store already held them)" in again.output


def test_a_second_run_on_its_own_store_is_not_refused(eval_env: Settings) -> None:
    first = CliRunner().invoke(eval_command, [SESSIONS, QUERIES])
    second = CliRunner().invoke(eval_command, [SESSIONS, QUERIES])
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    assert "(the store already held them)" in second.output


def test_bytes_that_are_not_utf8_skip_only_their_line(eval_env: Settings, tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    lines = (DATA / "queries.jsonl").read_bytes().split(b"\n")
    queries.write_bytes(b"\n".join([lines[0], b'{"id": "q\xff"}', *lines[1:]]))

    result = CliRunner().invoke(eval_command, [SESSIONS, str(queries)])

    assert result.exit_code == 0, result.output
    assert f"{queries}:2: not valid UTF-8; line skipped" in result.output
    assert "23 questions; 1 problems" in result.output


def test_a_terminal_sees_the_days_built_and_the_questions_asked(
    eval_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich takes click's captured stderr for one
    monkeypatch.setenv("COLUMNS", "120")

    shown = CliRunner().invoke(eval_command, [SESSIONS, QUERIES])
    printed = CliRunner().invoke(eval_command, [SESSIONS, QUERIES, "--json", "-"])

    assert shown.exit_code == 0 and printed.exit_code == 0, shown.output + printed.output
    days = shown.stdout.split("as of the end of each of ")[1].split()[0]
    assert final_bar(shown.stderr, "days of memory built")[1] == f"{days}/{days}"
    assert final_bar(shown.stderr, "questions asked")[1] == "23/23"
    assert printed.stderr == ""  # JSON out: no bars, even on a terminal
    assert json.loads(printed.stdout[printed.stdout.index("{") :])["ks"] == [1, 5, 10]


def test_gold_summaries_are_scored_beside_the_first_turns(
    eval_env: Settings, tmp_path: Path
) -> None:
    gold = tmp_path / "gold.jsonl"
    line = {
        "session_id": "a1",
        "language": "en",
        "summary": "Alice plans a long weekend in Lisbon in March, 12th to 16th, 1200 euros.",
        "facts": [
            "Alice's budget for Lisbon is around 1200 euros, flights included.",
            "Alice hates early flights.",
        ],
    }
    gold.write_text(json.dumps(line) + "\n" + json.dumps({**line, "session_id": "nope"}) + "\n")
    out = tmp_path / "eval.json"

    result = CliRunner().invoke(
        eval_command, [SESSIONS, QUERIES, "--gold", str(gold), "--json", str(out)]
    )

    assert result.exit_code == 0, result.output
    assert "summaries against the gold" in result.output and "hashing" in result.output
    assert "gold sessions without a summary in this set: nope" in result.output
    report = json.loads(out.read_text())
    overall = report["summaries"]["overall"]
    assert overall["sessions"] == 1 and overall["gold_facts"] == 2
    assert overall["missing"] == ["nope"]
    assert 0 < overall["summary_chars"]["mean"] <= 650
    assert 0 < overall["rouge1"]["summary"]["recall"] <= 1
    assert report["summaries"]["en"]["sessions"] == 1


def test_a_bad_gold_file_stops_the_eval(eval_env: Settings, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"session_id": "a1", "summary": "no facts"}\n')

    result = CliRunner().invoke(eval_command, [SESSIONS, QUERIES, "--gold", str(gold)])

    assert result.exit_code == 1
    assert f"{gold}:1:" in result.output and "facts" in result.output
