"""The sync split into shards: each shard writes only its namespaces, and the shards
together write exactly what one unsharded run writes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from flows.daily_sync import memory_sync_daily
from storage.kernel.settings import Settings
from storage.kernel.shards import Shard
from storage.server.engine import Store
from tests.helpers import add_session, chat, counts, files, run_sync, snapshot

AS_OF = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
NAMESPACES = [f"user-{i}" for i in range(12)] + ["user-1x", "user-10"]  # look-alikes


def fill(store: Store, rounds: int = 2) -> None:
    """``rounds`` sessions in each namespace, a morning's conversations."""
    for i, namespace in enumerate(NAMESPACES * rounds):
        add_session(
            store,
            f"s{i:02}",
            namespace,
            chat(
                MORNING + timedelta(minutes=7 * i % 600, seconds=i),
                f"Plan {i}: can we move the budget review to Thursday?",
                "Yes, Thursday at 10 works.",
                f"Decision {i}: Thursday it is, and I prefer the small room.",
            ),
        )


def memory_root(store: Store) -> Path:
    return Path(store.settings.memory_root_url)


def namespaces_written(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT DISTINCT s.namespace FROM processed_sessions p "
                "JOIN chat_sessions s ON s.id = p.session_id"
            )
        )
        return set(rows.scalars())


def test_four_shards_write_what_one_unsharded_run_writes(
    new_store: Callable[[str], Store],
) -> None:
    whole, sharded = new_store("whole"), new_store("sharded")
    for s in (whole, sharded):
        fill(s)
    run_sync(whole, AS_OF)

    for shard in Shard.all(4):
        before = namespaces_written(sharded)
        run_sync(sharded, AS_OF, shard=shard)
        added = namespaces_written(sharded) - before
        assert added and all(shard.holds(ns) for ns in added), shard

    assert snapshot(sharded) == snapshot(whole)
    assert files(memory_root(sharded), drop_ids=True) == files(memory_root(whole), drop_ids=True)
    again = run_sync(sharded, AS_OF)  # an unsharded run after the shards finds nothing to do
    assert again.written.sessions == 0 and counts(sharded) == counts(whole)


def test_a_shard_delivers_only_its_own_namespaces_file_blocks(
    new_store: Callable[[str], Store],
) -> None:
    store = new_store("blocks")
    fill(store)
    run_sync(store, AS_OF, flush=False)  # every block queued, none delivered
    first = Shard(1, 4)
    run_sync(store, AS_OF, shard=first)  # nothing left to write: it only delivers blocks
    with store.engine.connect() as conn:
        delivered = set(
            conn.execute(
                text(
                    "SELECT DISTINCT namespace FROM memory_file_blocks WHERE written_at IS NOT NULL"
                )
            ).scalars()
        )
        waiting = set(
            conn.execute(
                text("SELECT DISTINCT namespace FROM memory_file_blocks WHERE written_at IS NULL")
            ).scalars()
        )
    assert delivered == {ns for ns in NAMESPACES if first.holds(ns)}
    assert waiting == {ns for ns in NAMESPACES if not first.holds(ns)}


@pytest.mark.parametrize("bad", ["5/4", "0/3", "half"])
def test_the_flow_refuses_a_malformed_shard(flow_env: Settings, bad: str) -> None:
    with pytest.raises(Exception, match=r"expected i/n|pattern"):
        memory_sync_daily(as_of=AS_OF, shard=bad)


def test_a_shard_does_not_load_transcripts(flow_env: Settings) -> None:
    with pytest.raises(ValueError, match="a shard does not load transcripts"):
        memory_sync_daily(as_of=AS_OF, shard="1/2", transcripts_url="/nonexistent.jsonl")
