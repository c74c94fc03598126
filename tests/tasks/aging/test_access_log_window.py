"""The access log keeps a window (``ARCHIVIST_AGING__ACCESS_LOG_DAYS``): over a simulated
90 days of searches and primings, with the nightly prune, its size stays bounded while the
counts per day and the memories' access counts keep everything it saw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.settings import AgingSettings, RetrievalSettings
from storage.operations.access import LogWindow, fold_accesses
from storage.retrieval import Retriever
from storage.server.engine import Store
from tasks.aging import cutoffs, prune_access_log
from tests.storage.memory_factory import put

START = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
POLICY = AgingSettings(access_log_days=7)
SEARCHES = {"ann": 3, "anna": 1}  # per day; anna also primes once a day


def _scalar(store: Store, sql: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text(sql)).scalar_one())


def test_the_log_stays_bounded_over_90_days_and_nothing_is_uncounted(store: Store) -> None:
    for ns in SEARCHES:
        put(store, ns, [f"the boiler of {ns} is serviced in March"], START - timedelta(days=1))
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())
    sizes = []
    for day in range(90):
        as_of = START + timedelta(days=day)
        for ns, searches in SEARCHES.items():
            for n in range(searches):
                hits = retriever.search(ns, "boiler", as_of=as_of + timedelta(minutes=n))
                assert [h.namespace for h in hits] == [ns]
        retriever.prime("anna", "the boiler?", as_of=as_of + timedelta(minutes=30))
        window = LogWindow(cutoffs(as_of + timedelta(hours=3), POLICY).access_log, "UTC")
        prune_access_log(store.engine, window, batch=4)  # small batches: several a night
        sizes.append(_scalar(store, "SELECT count(*) FROM memory_access_log"))

    per_day = sum(SEARCHES.values()) + 1
    # Bounded by the window: 7 days of rows (the night's prune leaves the 7 days before it).
    assert max(sizes) == 7 * per_day and sizes[-1] == 7 * per_day
    assert sizes[6] == 7 * per_day and sizes[:6] == [per_day * d for d in range(1, 7)]
    with store.engine.connect() as conn:
        daily = conn.execute(
            text(
                "SELECT namespace, count(*), sum(searches), sum(primings), min(day), max(day) "
                "FROM memory_access_daily GROUP BY namespace ORDER BY namespace"
            )
        ).all()
        logged = dict(
            conn.execute(
                text("SELECT namespace, count(*) FROM memory_access_log GROUP BY namespace")
            )
            .tuples()
            .all()
        )
    counted_days = 90 - 7
    assert [tuple(row) for row in daily] == [
        ("ann", counted_days, 3 * counted_days, 0, START.date(), (START + timedelta(82)).date()),
        (
            "anna",
            counted_days,
            counted_days,
            counted_days,
            START.date(),
            (START + timedelta(82)).date(),
        ),
    ]
    assert logged == {"ann": 3 * 7, "anna": 2 * 7}
    # The counts scoring reads never came from the log: every access is still there.
    with Session(store.engine) as session, session.begin():
        fold_accesses(session)
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT namespace, access_count FROM memories"))
        accessed = dict(rows.tuples().all())
    assert accessed == {"ann": 3 * 90, "anna": 2 * 90}


def test_a_prune_is_deterministic_and_a_rerun_counts_nothing_twice(store: Store) -> None:
    (mid,) = put(store, "ann", ["a note"], START)
    retriever = Retriever(store.engine, HashingEmbedder(384), RetrievalSettings())
    for day in range(10):
        retriever.search("ann", "note", as_of=START + timedelta(days=day))
    window = LogWindow(START + timedelta(days=5), "UTC", namespace="ann")
    found = prune_access_log(store.engine, window, batch=100, dry_run=True)
    assert (found.rows, _scalar(store, "SELECT count(*) FROM memory_access_log")) == (5, 10)

    first = prune_access_log(store.engine, window, batch=2)
    again = prune_access_log(store.engine, window, batch=2)
    other = prune_access_log(store.engine, LogWindow(START + timedelta(days=9), "UTC", "anna"), 9)

    assert (first.rows, first.days, first.batches) == (5, 5, 3)
    assert (again.rows, other.rows) == (0, 0)
    assert _scalar(store, "SELECT sum(searches) FROM memory_access_daily") == 5
    assert _scalar(store, "SELECT sum(hits) FROM memory_access_daily") == 5
    assert _scalar(store, "SELECT min(accessed_at) >= '2026-03-06' FROM memory_access_log") == 1
    assert mid > 0
