"""Pooled connections are pinged only after sitting idle, and a dead one is replaced."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from storage.server.pool_ping import ping_when_idle

PID = text("SELECT pg_backend_pid()")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pooled(fresh_db: str) -> Iterator[tuple[Engine, Engine, Clock]]:
    """An engine of one pooled connection that pings after 10 idle s of a test's clock,
    and an admin engine that can end its backend."""
    clock = Clock()
    engine = create_engine(fresh_db, pool_size=1, max_overflow=0)
    ping_when_idle(engine, after=10.0, clock=clock)
    admin = create_engine(fresh_db)
    yield engine, admin, clock
    engine.dispose()
    admin.dispose()


def _pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(PID).scalar_one())


def _end(admin: Engine, pid: int) -> None:
    with admin.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()


def _last_query(admin: Engine, pid: int) -> str:
    """What the pooled connection's backend last ran."""
    with admin.connect() as conn:
        query = text("SELECT query FROM pg_stat_activity WHERE pid = :p")
        return str(conn.execute(query, {"p": pid}).scalar_one())


def test_a_connection_back_within_the_idle_time_is_not_pinged(
    pooled: tuple[Engine, Engine, Clock],
) -> None:
    engine, admin, clock = pooled
    pid = _pid(engine)
    clock.now += 9.0
    with engine.connect():
        pass
    assert _last_query(admin, pid) == "ROLLBACK"  # the pool's reset after the last use
    clock.now += 11.0
    with engine.connect():
        pass
    assert _last_query(admin, pid) == ";"  # the ping: the dialect's empty statement


def test_a_dead_connection_idle_long_enough_is_replaced_at_checkout(
    pooled: tuple[Engine, Engine, Clock],
) -> None:
    engine, admin, clock = pooled
    first = _pid(engine)
    _end(admin, first)
    clock.now += 11.0
    assert _pid(engine) != first  # pinged, found dead, replaced: the caller saw nothing


def test_a_connection_that_died_while_recently_used_fails_once(
    pooled: tuple[Engine, Engine, Clock],
) -> None:
    engine, admin, clock = pooled
    first = _pid(engine)
    _end(admin, first)
    clock.now += 1.0
    with pytest.raises(OperationalError), engine.connect() as conn:
        conn.execute(PID)
    assert _pid(engine) != first  # the pool dropped it: the next checkout connects anew
