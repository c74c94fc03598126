"""The queue commands as a user runs them: enqueue, stats, one drain, the worker."""

from __future__ import annotations

import json

from click.testing import CliRunner

from deployments.cli import main
from storage.kernel.settings import Settings


def test_enqueue_stats_and_worker_once(flow_env: Settings) -> None:
    runner = CliRunner()
    payload = json.dumps({"content": "Alice's passport expires in May", "kind": "fact"})

    first = runner.invoke(
        main, ["enqueue", "alice", "ADD_MEMORY", "--payload", payload, "--key", "k1"]
    )
    again = runner.invoke(
        main, ["enqueue", "alice", "ADD_MEMORY", "--payload", payload, "--key", "k1"]
    )
    before = runner.invoke(main, ["queue", "stats"])
    drained = runner.invoke(main, ["worker", "--once"])
    after = runner.invoke(main, ["queue", "stats"])
    found = runner.invoke(main, ["search", "alice", "passport", "--no-record"])

    assert first.exit_code == 0, first.output
    assert first.output == "queued item 1 (ADD_MEMORY for alice)\n"
    assert again.exit_code == 0, again.output
    assert again.output == "already queued as item 1 (same idempotency key 'k1' for alice)\n"
    assert "pending 1 (due 1), processing 0 (stuck 0, worker gone 0), completed 0, dead 0" in (
        before.output
    )
    assert drained.exit_code == 0, drained.output
    assert "batch of 1: 1 completed, 0 retry later, 0 dead" in drained.output
    assert "completed 1, dead 0" in after.output
    assert "passport expires in May" in found.output
    counted = runner.invoke(main, ["search", "alice", "passport"])  # counted, pending a fold
    folded = runner.invoke(main, ["worker", "--once"])
    assert counted.exit_code == 0 and folded.exit_code == 0, folded.output
    assert "0 reclaimed; 1 accesses folded into their memories" in folded.output


def test_bad_payloads_are_one_clear_line(flow_env: Settings) -> None:
    runner = CliRunner()
    not_json = runner.invoke(main, ["enqueue", "alice", "ADD_MEMORY", "--payload", "{oops"])
    missing = runner.invoke(main, ["enqueue", "alice", "ADD_MEMORY", "--payload", "{}"])
    unknown = runner.invoke(main, ["enqueue", "alice", "REMEMBER", "--payload", "{}"])

    assert not_json.exit_code == 1 and "--payload is not valid JSON" in not_json.output
    assert missing.exit_code == 1
    assert "ADD_MEMORY payload refused: missing field 'content'" in missing.output
    assert unknown.exit_code == 2 and "'REMEMBER' is not one of" in unknown.output


def test_queue_drain_runs_the_flow_and_prints_its_report(flow_env: Settings) -> None:
    runner = CliRunner()
    runner.invoke(main, ["enqueue", "bob", "UPDATE_GOAL", "--payload", '{"content": "learn Go"}'])

    result = runner.invoke(main, ["queue", "drain"])

    assert result.exit_code == 0, result.output
    assert "# memory-queue-drain report" in result.output
    assert "| claimed / completed | 1 / 1 |" in result.output
