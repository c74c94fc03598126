"""End-to-end runs of memory-aging and memory-forget through the Prefect engine."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from deployments.commands.privacy import COMMANDS
from flows.aging import memory_aging
from flows.forget import memory_forget
from storage.kernel.settings import Settings
from storage.kernel.shards import Shard
from storage.server.engine import Store, open_store
from tasks.aging import open_cold_store
from tests.storage.memory_factory import put
from tests.tasks.aging.helpers import AS_OF, LONG_AGO, MONTHS_AGO, RECENTLY, synced_session
from tests.tasks.aging.sharding import NAMESPACES, seed, state


def counts(settings: Settings) -> dict[str, int]:
    store = open_store(settings)
    queries = {
        "hot": "SELECT count(*) FROM memories",
        "archived": "SELECT count(*) FROM archived_memories",
        "messages": "SELECT count(*) FROM chat_messages",
        "compressed": "SELECT count(*) FROM memories WHERE tier = 'compressed'",
        "logged": "SELECT count(*) FROM memory_access_log",
        "counted": "SELECT coalesce(sum(searches + primings), 0) FROM memory_access_daily",
    }
    with store.engine.connect() as conn:
        return {k: conn.execute(text(q)).scalar_one() for k, q in queries.items()}


def test_aging_flow_reports_each_step_and_a_rerun_changes_nothing(flow_env: Settings) -> None:
    store = open_store(flow_env)
    synced_session(store, "old", "alice", LONG_AGO)
    synced_session(store, "mid", "alice", MONTHS_AGO)
    synced_session(store, "new", "alice", RECENTLY)
    put(store, "alice", ["ancient note"], AS_OF - timedelta(days=900))
    with store.engine.begin() as conn:  # two searches past the log's 90 days, one within
        for days in (200, 91, 1):
            conn.execute(
                text(
                    "INSERT INTO memory_access_log (namespace, context, accessed_at, memory_ids) "
                    "VALUES ('alice', 'search: note', :at, '{1}')"
                ),
                {"at": AS_OF - timedelta(days=days)},
            )
    before = counts(flow_env)

    dry = memory_aging(as_of=AS_OF, dry_run=True)
    assert counts(flow_env) == before
    assert dry.archival.candidates > 0 and dry.compression.sessions == 2
    assert dry.access_log.rows == 2

    report = memory_aging(as_of=AS_OF)

    assert report.decay.memories_written > 0
    assert report.compression.sessions == 2 and report.compression.turns_folded > 0
    # the dry run also counted the old session's turns, which compression folded away
    assert 0 < report.archival.rows_archived == report.archival.candidates
    assert report.archival.candidates < dry.archival.candidates
    assert report.deletion.enabled is False
    after = counts(flow_env)
    assert after["messages"] == 4 and after["archived"] == report.archival.rows_archived
    assert (report.access_log.rows, after["logged"], after["counted"]) == (2, 1, 2)
    assert "| archival |" in report.markdown() and "| access_log | rows 2" in report.markdown()
    again = memory_aging(as_of=AS_OF)
    assert (again.compression.sessions, again.archival.rows_archived) == (0, 0)
    assert again.access_log.rows == 0
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


def test_aging_as_four_shards_ends_as_one_run_and_each_shard_leaves_the_rest_alone(
    flow_env: Settings, new_store: Callable[[str], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVIST_AGING__DELETION_ENABLED", "true")
    sharded, whole = open_store(flow_env), new_store("whole")
    cold, whole_cold = open_cold_store(flow_env), open_cold_store(whole.settings)
    seed(sharded, cold)
    seed(whole, whole_cold)

    for shard in Shard.all(4):
        mine = {ns for ns in NAMESPACES if shard.holds(ns)}
        before = state(sharded, cold), state(sharded, cold, versions=True)
        report = memory_aging(as_of=AS_OF, shard=str(shard))
        after = state(sharded, cold), state(sharded, cold, versions=True)
        for was, now in zip(before, after, strict=True):  # rows, versions, files: as they were
            assert {ns: now.get(ns) for ns in NAMESPACES if ns not in mine} == {
                ns: was.get(ns) for ns in NAMESPACES if ns not in mine
            }, shard
        assert all(after[0][ns] != before[0][ns] for ns in mine)
        assert (report.shard, report.deletion.sessions) == (str(shard), len(mine))
        assert f"shard: {shard}" in report.markdown()
    whole_settings = whole.settings
    assert whole_settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", whole_settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(whole_settings.data_dir))
    monkeypatch.setenv("ARCHIVIST_MEMORY_ROOT", whole_settings.memory_root_url)
    report = memory_aging(as_of=AS_OF)

    assert report.shard is None and "shard: all" in report.markdown()
    expected = state(whole, whole_cold)
    assert all(len(expected[ns]["archived"]) == 9 for ns in NAMESPACES)  # every step had work
    assert state(sharded, cold) == expected
    with sharded.engine.connect() as conn:
        recorded = conn.execute(
            text("SELECT parameters ->> 'shard', status FROM runs ORDER BY started_at")
        ).all()
    assert [tuple(r) for r in recorded] == [(f"{i}/4", "completed") for i in range(1, 5)]


def test_a_malformed_shard_is_refused_and_nothing_runs(flow_env: Settings) -> None:
    store = open_store(flow_env)
    put(store, "alice", ["ancient note"], AS_OF - timedelta(days=900))
    before = counts(flow_env)

    with pytest.raises(ValueError, match=r"shard 5/4: expected i/n with 1 <= i <= n"):
        memory_aging(as_of=AS_OF, shard="5/4")
    with pytest.raises(Exception, match=r"shard[\s\S]*should match pattern"):
        memory_aging(as_of=AS_OF, shard="two/4")
    refused = CliRunner().invoke({c.name: c for c in COMMANDS}["aging"], ["--shard", "0/4"])

    assert refused.exit_code == 2 and "shard '0/4': expected i/n, for example 2/4" in refused.output
    assert counts(flow_env) == before
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar_one() == 0
