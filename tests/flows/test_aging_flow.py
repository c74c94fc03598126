"""End-to-end runs of memory-aging and memory-forget through the Prefect engine."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from deployments.commands.privacy import COMMANDS
from flows.aging import memory_aging
from flows.forget import memory_forget
from storage.config import Settings
from storage.engine import open_store
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import AS_OF, LONG_AGO, MONTHS_AGO, RECENTLY, synced_session


def counts(settings: Settings) -> dict[str, int]:
    store = open_store(settings)
    queries = {
        "hot": "SELECT count(*) FROM memories",
        "archived": "SELECT count(*) FROM archived_memories",
        "messages": "SELECT count(*) FROM chat_messages",
        "compressed": "SELECT count(*) FROM memories WHERE tier = 'compressed'",
    }
    with store.engine.connect() as conn:
        return {k: conn.execute(text(q)).scalar_one() for k, q in queries.items()}


def test_aging_flow_reports_each_step_and_a_rerun_changes_nothing(flow_env: Settings) -> None:
    store = open_store(flow_env)
    synced_session(store, "old", "alice", LONG_AGO)
    synced_session(store, "mid", "alice", MONTHS_AGO)
    synced_session(store, "new", "alice", RECENTLY)
    put(store, "alice", ["ancient note"], AS_OF - timedelta(days=900))
    before = counts(flow_env)

    dry = memory_aging(as_of=AS_OF, dry_run=True)
    assert counts(flow_env) == before
    assert dry.archival.candidates > 0 and dry.compression.sessions == 2

    report = memory_aging(as_of=AS_OF)

    assert report.decay.memories_written > 0
    assert report.compression.sessions == 2 and report.compression.turns_folded > 0
    # the dry run also counted the old session's turns, which compression folded away
    assert 0 < report.archival.rows_archived == report.archival.candidates
    assert report.archival.candidates < dry.archival.candidates
    assert report.deletion.enabled is False
    after = counts(flow_env)
    assert after["messages"] == 4 and after["archived"] == report.archival.rows_archived
    assert "| archival |" in report.markdown()
    again = memory_aging(as_of=AS_OF)
    assert (again.compression.sessions, again.archival.rows_archived) == (0, 0)
    assert again.decay.memories_written == 0
    assert counts(flow_env) == after


def test_forget_flow_needs_confirmation(flow_env: Settings) -> None:
    put(open_store(flow_env), "alice", ["a note"], AS_OF)
    with pytest.raises(ValueError):
        memory_forget("alice")
    out = memory_forget("alice", confirm=True)
    assert out.rows["memories"] == 1


def test_cli_commands_refuse_without_confirm_and_run_with_it(flow_env: Settings) -> None:
    (mid,) = put(open_store(flow_env), "alice", ["a note"], AS_OF)
    commands = {c.name: c for c in COMMANDS}
    runner = CliRunner()
    refused = runner.invoke(commands["forget"], ["alice"])
    assert refused.exit_code != 0 and "--confirm" in refused.output
    assert runner.invoke(commands["pin"], [str(mid)]).exit_code == 0
    assert runner.invoke(commands["unpin"], [str(mid)]).exit_code == 0
    assert runner.invoke(commands["purge"], ["--session", "x"]).exit_code != 0
    done = runner.invoke(commands["forget"], ["alice", "--confirm"])
    assert done.exit_code == 0, done.output
    assert "forgot alice" in done.output
