"""What every flow shares: the scaffold of a run (``flow_run``), its parameters' helpers and
the deployments' tag.

A flow reads like a recipe because its setup is said once, here::

    with flow_run(FLOW_NAME, as_of, Scope(namespace, shard, dry_run=dry_run)) as run:
        ...  # the flow's own steps, given run.store, run.embedder, run.as_of, run.scope
        run.finish(report)
        run.publish(report)

``flow_run`` builds the one ``Settings`` of the run, makes ``as_of`` aware once (naive: the
configured zone; empty: now) and checks it, opens the store (and the embedder, unless the
flow needs none), and records the run's start in ``runs`` with its parameters, the
namespace named by its pseudonym (a dry run, or a flow whose outcome lives elsewhere,
records none).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from storage.embedding import Embedder
from storage.kernel.errors import InputError
from storage.kernel.inputs import check_instant
from storage.kernel.settings import Settings
from storage.kernel.shards import Scope, Shard
from storage.server.engine import Store
from tasks.common import (
    RunReport,
    connect_task,
    finish_run,
    open_store_task,
    pseudonyms_task,
    publish_report,
    start_run,
)

TAG = "archivist"  # every deployment carries it; the watchdog watches what has it
WHOLE_STORE = Scope()


@dataclass
class FlowRun:
    """One flow run, set up: what its steps are given, and how it ends."""

    name: str
    settings: Settings
    store: Store
    as_of: datetime
    scope: Scope
    run_id: uuid.UUID | None
    started: datetime
    pseudonym: str | None  # what reports call the scope's namespace
    _embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        """The store's embedder (only for a run set up with one)."""
        if self._embedder is None:
            raise RuntimeError(f"{self.name} was set up without an embedder")
        return self._embedder

    def finish(self, report: RunReport) -> None:
        """Record that the run completed, with its report (a run recording none: nothing)."""
        if self.run_id is not None:
            finish_run(self.store, self.run_id, report)

    def publish(self, report: RunReport) -> None:
        """The report as the run's Prefect artifact."""
        publish_report(self.name, report)


@contextmanager
def flow_run(
    name: str,
    as_of: datetime | None,
    scope: Scope = WHOLE_STORE,
    parameters: Mapping[str, object] | None = None,
    *,
    record: bool = True,
    embedder: bool = True,
) -> Iterator[FlowRun]:
    """Set up a run of flow ``name``: settings, ``as_of`` made aware, the store (with its
    embedder unless ``embedder`` is false), and, unless it is a dry run or ``record`` is
    false, its start in ``runs`` with ``parameters`` and the scope."""
    settings = Settings()
    moment = resolve_as_of(as_of, settings)
    started = datetime.now(UTC)
    if embedder:
        store, model = connect_task(settings)
    else:
        store, model = open_store_task(settings), None
    pseudonym = pseudonyms_task(store, [scope.namespace]).namespace(scope.namespace)
    params = {**(parameters or {}), "namespace": pseudonym, "shard": scope.shard_label}
    params["dry_run"] = scope.dry_run
    recorded = record and not scope.dry_run
    run_id = start_run(store, name, moment, params) if recorded else None
    yield FlowRun(name, settings, store, moment, scope, run_id, started, pseudonym, model)


def resolve_as_of(as_of: datetime | None, settings: Settings) -> datetime:
    """Now when unset; a naive time is read in the configured time zone. A time outside
    what every part of the stack reads (``storage.kernel.inputs.check_instant``) is refused."""
    if as_of is None:
        return datetime.now(UTC)
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=settings.tz)
    try:
        return check_instant(as_of)
    except ValueError as exc:
        raise InputError(f"as_of {as_of.isoformat()} {exc}") from None


def resolve_shard(shard: str | None) -> Shard | None:
    """None (every namespace) when unset; ``"2/4"`` as its shard, or a clear error."""
    return None if shard is None or not shard.strip() else Shard.parse(shard)
