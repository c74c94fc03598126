"""reembed as a user runs it after changing the embedding settings."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.cli import main
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.helpers import final_bar
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_a_new_model_is_refused_until_reembed_moves_the_store(
    env: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    put(open_store(env), "alice", [f"dentist visit number {i}" for i in range(5)], NOW)
    put(open_store(env), "bob", ["oat milk", "rye bread"], NOW)
    (tmp_path / "clinic.md").write_text("# The clinic\n\nOpen Monday to Friday, 8 to 18.\n")
    runner = CliRunner()
    ingested = runner.invoke(main, ["docs", "ingest", "alice", str(tmp_path / "clinic.md")])
    assert ingested.exit_code == 0, ingested.output
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__DIM", "128")

    refused = runner.invoke(main, ["search", "alice", "dentist"])
    assert refused.exit_code == 1
    assert "hashing-v1-384 (384 dimensions)" in refused.output
    assert "run `archivist reembed`" in refused.output and "Traceback" not in refused.output

    partial = runner.invoke(main, ["reembed", "--namespace", "alice", "--batch-size", "2"])
    assert partial.exit_code == 0, partial.output
    assert "  2/6 memories and document chunks re-embedded" in partial.output
    assert (
        "5 memories and 1 document chunks re-embedded; 2 rows in other namespaces still wait"
        in partial.output
    )

    done = runner.invoke(main, ["reembed"])
    assert done.exit_code == 0, done.output
    assert "2 memories and 0 document chunks re-embedded; the store now uses hashing-v1-128" in (
        done.output
    )
    found = runner.invoke(main, ["search", "alice", "dentist visit number 3", "--limit", "1"])
    assert found.exit_code == 0 and "dentist visit number 3" in found.output
    assert "nothing to do" in runner.invoke(main, ["reembed"]).output


def test_reembed_refuses_a_bad_namespace(env: Settings) -> None:
    result = CliRunner().invoke(main, ["reembed", "--namespace", "bob\n"])
    assert result.exit_code == 1 and "not a valid name" in result.output


def test_a_terminal_sees_a_bar_instead_of_the_progress_lines(
    env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(open_store(env), "alice", [f"dentist visit number {i}" for i in range(5)], NOW)
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__DIM", "128")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich takes click's captured stderr for one
    monkeypatch.setenv("COLUMNS", "120")

    result = CliRunner().invoke(main, ["reembed", "--batch-size", "2"])

    assert result.exit_code == 0, result.output
    assert final_bar(result.stderr, "memories and document chunks re-embedded")[1] == "5/5"
    assert result.stdout == (
        "5 memories and 0 document chunks re-embedded; the store now uses hashing-v1-128\n"
    )


def test_reembed_switches_the_local_model_graph_and_auto_finishes_a_run_under_way(
    env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(open_store(env), "alice", [f"dentist visit number {i}" for i in range(5)], NOW)
    put(open_store(env), "bob", ["oat milk", "rye bread"], NOW)
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__PROVIDER", "local")
    monkeypatch.setenv("ARCHIVIST_EMBEDDING__STORE_ENCODER", "int8")
    runner = CliRunner()
    partial = runner.invoke(main, ["reembed", "--namespace", "alice"])
    assert partial.exit_code == 0 and "2 rows in other namespaces still wait" in partial.output

    monkeypatch.delenv("ARCHIVIST_EMBEDDING__STORE_ENCODER")  # auto: the run under way's
    done = runner.invoke(main, ["reembed"])
    assert done.exit_code == 0, done.output
    assert "2 memories and 0 document chunks re-embedded; the store now uses " in done.output
    assert done.output.rstrip().endswith("all-MiniLM-L6-v2/int8")
    again = runner.invoke(main, ["reembed"]).output
    assert "uses all-MiniLM-L6-v2/int8 (turns embedded alone); nothing to do" in again

    monkeypatch.setenv("ARCHIVIST_EMBEDDING__STORE_ENCODER", "float32")
    refused = runner.invoke(main, ["search", "alice", "dentist"])
    assert refused.exit_code == 1 and "all-MiniLM-L6-v2/int8 (384 dimensions)" in refused.output
    back = runner.invoke(main, ["reembed"])
    assert back.exit_code == 0 and "7 memories and 0 document chunks" in back.output
    assert back.output.rstrip().endswith("the store now uses all-MiniLM-L6-v2")
    monkeypatch.delenv("ARCHIVIST_EMBEDDING__STORE_ENCODER")
    found = runner.invoke(main, ["search", "alice", "dentist visit number 3", "--limit", "1"])
    assert found.exit_code == 0 and "dentist visit number 3" in found.output


def test_toggling_turn_context_and_reembedding_re_embeds_the_turns(
    env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    talk = ["I need flights to Lisbon", "TAP flies direct on Friday"]
    put(open_store(env), "alice", talk, NOW, kind="turn", session_id="trip")
    runner = CliRunner()
    assert runner.invoke(main, ["reembed"]).exit_code == 0  # the store's facts recorded
    alone = runner.invoke(main, ["reembed"]).output
    assert "uses hashing-v1-384 (turns embedded alone); nothing to do" in alone

    monkeypatch.setenv("ARCHIVIST_EMBEDDING__TURN_CONTEXT", "true")
    done = runner.invoke(main, ["reembed"])
    assert done.exit_code == 0, done.output
    assert "2 memories and 0 document chunks re-embedded; the store now uses hashing-v1-384" in (
        done.output
    )
    again = runner.invoke(main, ["reembed"]).output
    assert "(turns embedded with their context); nothing to do" in again

    monkeypatch.delenv("ARCHIVIST_EMBEDDING__TURN_CONTEXT")
    back = runner.invoke(main, ["reembed"]).output
    assert "2 memories and 0 document chunks re-embedded" in back
