"""Where erased data could hide, each searched for a set of needles (casefolded).

Every place the pipeline writes: each row of each table of the store (as text, the stems
of the full-text index included), ``pg_stats``, the files of every relation of the
database after a ``CHECKPOINT`` (tables, TOAST, indexes, catalogs: ``pg_statistic``
too), every file under the given folders, every object of a bucket, and every row of
every table of the Prefect database. A hit says where it is, which needles it holds, and
a little of what it found.
"""

from __future__ import annotations

import io
import sqlite3
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import pyarrow.parquet as pq
import s3fs
from prefect.settings import get_current_settings
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

TABLES = text(
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1"
)
STATS = text(
    "SELECT tablename, attname, s::text FROM pg_stats s "
    "WHERE schemaname = current_schema() ORDER BY 1, 2"
)
# Every relation of this database that has files, with the table it belongs to (an index's
# or a TOAST table's): the shared catalogs live in ``global`` and hold no user data.
RELATION_FILES = text(
    """
    SELECT c.oid::regclass::text,
           coalesce(i.indrelid::regclass::text, t.oid::regclass::text, c.oid::regclass::text),
           pg_relation_filepath(c.oid)
    FROM pg_class c
    LEFT JOIN pg_index i ON i.indexrelid = c.oid
    LEFT JOIN pg_class t ON t.reltoastrelid = c.oid
    WHERE c.relkind IN ('r', 'i', 't', 'm') AND NOT c.relisshared
      AND pg_relation_filepath(c.oid) IS NOT NULL
    ORDER BY 1
    """
)


class Hit(NamedTuple):
    """A place that holds needles: ``<kind> <table or file>``, which ones, and an excerpt."""

    place: str
    found: tuple[str, ...]
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.place}: {list(self.found)} {self.detail}".rstrip()


class Needles:
    """Strings that must not be found; ``holds`` says which a text contains."""

    def __init__(self, *needles: str) -> None:
        self.folded = tuple(n.casefold() for n in needles)
        self.raw = tuple(n.casefold().encode() for n in needles)

    def holds(self, value: str) -> tuple[str, ...]:
        folded = value.casefold()
        return tuple(n for n in self.folded if n in folded)

    def in_bytes(self, data: bytes) -> tuple[str, ...]:
        lowered = data.lower()
        return tuple(n.decode() for n in self.raw if n in lowered)


def store_rows(engine: Engine, needles: Needles) -> list[Hit]:
    """Every row of the store (as text) that holds a needle."""
    hits: list[Hit] = []
    with engine.connect() as conn:
        for table in list(conn.execute(TABLES).scalars()):
            for row in conn.execute(text(f'SELECT t::text FROM "{table}" AS t')).scalars():
                if found := needles.holds(row):
                    hits.append(Hit(f"row of {table}", found, row[:200]))
    return hits


def statistics(engine: Engine, needles: Needles) -> list[Hit]:
    """Each column whose planner statistics (``pg_stats``) hold a needle."""
    with engine.connect() as conn:
        rows = conn.execute(STATS).all()
    return [Hit(f"pg_stats of {t}", needles.holds(s), a) for t, a, s in rows if needles.holds(s)]


def relation_files(engine: Engine, needles: Needles) -> list[Hit]:
    """Each relation (table, index, TOAST) whose files hold a needle on disk, by its table.

    Values PostgreSQL compressed (long ones, inline or in TOAST) are not seen by a byte
    scan; the scans of rows and of ``pg_stats`` read them."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("CHECKPOINT"))
        base = Path(conn.execute(text("SHOW data_directory")).scalar_one())
        relations = conn.execute(RELATION_FILES).all()
    hits = []
    for name, table, relative in relations:
        data = (path.read_bytes() for path in _segments(base / relative))
        found = tuple(sorted({n for chunk in data for n in needles.in_bytes(chunk)}))
        if found:
            hits.append(Hit(f"file of {table}", found, f"{name} ({relative})"))
    return hits


def _segments(path: Path) -> Iterator[Path]:
    """A relation's main file and its 1 GB continuation segments (``.1``, ``.2``...)."""
    if path.exists():
        yield path
    yield from sorted(path.parent.glob(f"{path.name}.[0-9]*"))


def _readable(name: str, data: bytes) -> str:
    if name.endswith(".parquet"):
        return str(pq.read_table(io.BytesIO(data)).to_pylist())
    return data.decode("utf-8", "replace")


def files(needles: Needles, *roots: Path) -> list[Hit]:
    """Every file under the roots whose path, text or Parquet rows hold a needle."""
    found: Iterable[Path] = (p for root in roots for p in root.rglob("*") if p.is_file())
    hits = [
        Hit("file", needles.holds(str(p) + _readable(p.name, p.read_bytes())), str(p))
        for p in found
    ]
    return [hit for hit in hits if hit.found]


def bucket(fs: s3fs.S3FileSystem, name: str, needles: Needles) -> list[Hit]:
    """Every object of the bucket whose key or content holds a needle."""
    hits = [
        Hit("object", needles.holds(k + _readable(k, fs.cat_file(k))), k) for k in fs.find(name)
    ]
    return [hit for hit in hits if hit.found]


def prefect_database() -> Path:
    configured = get_current_settings().server.database.connection_url
    assert configured is not None
    database = make_url(configured.get_secret_value()).database
    assert database, configured
    return Path(database)


def prefect_rows(needles: Needles) -> list[Hit]:
    """Every row of every table of the Prefect database (the harness's SQLite file)."""
    hits: list[Hit] = []
    with sqlite3.connect(prefect_database()) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            for row in db.execute(f'SELECT * FROM "{name}"'):
                if found := needles.holds(str(row)):
                    hits.append(Hit(f"prefect {name}", found, str(row)[:300]))
    return hits


def prefect_now() -> str:
    """The Prefect database's notion of now (UTC, its text format), to tell a test's runs."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


# Runs of the test that ended, and what of them is not in the database yet: events come
# through an asynchronous persister, so a scan must wait for them or it proves nothing.
_UNSETTLED = """
    WITH runs AS (
        SELECT 'prefect.flow-run.' || id AS resource, 'prefect.flow-run.' || state_name AS event
        FROM flow_run WHERE created >= :since AND state_type IN ('COMPLETED', 'FAILED')
        UNION ALL
        SELECT 'prefect.task-run.' || t.id, 'prefect.task-run.' || t.state_name
        FROM task_run t JOIN flow_run f ON f.id = t.flow_run_id
        WHERE f.created >= :since AND t.state_type IN ('COMPLETED', 'FAILED')
    )
    SELECT count(*) FROM runs r
    WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.resource_id = r.resource AND e.event = r.event)
    UNION ALL
    SELECT count(*) FROM flow_run f
    WHERE f.created >= :since AND f.state_type IN ('COMPLETED', 'FAILED')
      AND NOT EXISTS (
        SELECT 1 FROM log l WHERE l.flow_run_id = f.id AND l.message LIKE 'Finished in state%'
      )
"""


def wait_for_prefect(since: str, timeout: float = 60.0) -> None:
    """Until every event and the last log line of the runs since ``since`` are stored."""
    deadline = time.monotonic() + timeout
    with sqlite3.connect(prefect_database()) as db:
        while True:
            missing = [n for (n,) in db.execute(_UNSETTLED, {"since": since})]
            if not any(missing):
                return
            assert time.monotonic() < deadline, f"Prefect has not stored {missing} yet"
            time.sleep(0.2)
