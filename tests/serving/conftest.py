"""``archivist api`` as a user starts it: a real process and a real uvicorn on loopback,
over a database of its own (one per test module), serving as the serving role."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from storage.kernel.settings import Settings
from storage.keys import create_key
from storage.public_ids import PublicIds
from storage.server.engine import Store, get_engine, open_store
from tests.conftest import COPY

ARCHIVIST = str(Path(sys.executable).parent / "archivist")
LISTENING = re.compile(r"running on (http://127\.0\.0\.1:\d+)")


@dataclass
class Served:
    """A running ``archivist api`` and the store behind it."""

    url: str
    settings: Settings
    store: Store
    process: subprocess.Popen[bytes]
    log: Path

    def key(self, namespace: str, *, read_only: bool = False) -> str:
        with Session(self.store.engine) as session, session.begin():
            return create_key(session, namespace, read_only=read_only)[1]

    def shown(self, *reals: int) -> list[int]:
        """The public ids (``storage.public_ids``) the API shows for these memory ids."""
        with self.store.engine.connect() as conn:
            ids = PublicIds.load(conn)
        return [ids.show("memory", real) for real in reals]

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {} if key is None else {"Authorization": f"Bearer {key}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def environment(self) -> dict[str, str]:
        assert self.settings.database_url is not None
        return {
            **os.environ,
            "ARCHIVIST_DATABASE_URL": self.settings.database_url.get_secret_value(),
            "ARCHIVIST_DATA_DIR": str(self.settings.data_dir),
            "ARCHIVIST_MEMORY_ROOT": str(self.settings.memory_root),
            "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
        }


def _admin(url: str, sql: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(sql))
    engine.dispose()


def wait_for_line(process: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str]) -> str:
    """The first match of ``pattern`` in the process's log, waiting up to a minute."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = pattern.search(log.read_text())
        if found:
            return found.group(1)
        if process.poll() is not None:
            raise AssertionError(f"exited {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    raise AssertionError(f"no {pattern.pattern!r} within a minute:\n{log.read_text()}")


@contextmanager
def _serving(pg_url: str, template_db: str, folder: Path, batch_seconds: float) -> Iterator[Served]:
    """``archivist api`` over a database of its own, its searches' accesses written every
    ``batch_seconds`` (0: by each search, so a test reads them right after it)."""
    name = f"api_{uuid.uuid4().hex[:12]}"
    _admin(pg_url, f"CREATE DATABASE {name} TEMPLATE {template_db} {COPY}")
    url = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    settings = Settings(
        database_url=url, data_dir=folder / "data", memory_root=str(folder / "memory")
    )
    log = folder / "api.log"
    served = Served("", settings, open_store(settings), None, log)  # type: ignore[arg-type]
    environment = served.environment() | {
        "ARCHIVIST_SERVING__ACCESS_BATCH_SECONDS": str(batch_seconds)
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [ARCHIVIST, "api", "--port", "0"],
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    served.process = process
    try:
        served.url = wait_for_line(process, log, LISTENING)
        yield served
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        get_engine(url).dispose()
        _admin(pg_url, f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def served(
    pg_url: str, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with _serving(pg_url, template_db, tmp_path_factory.mktemp("api"), 0) as served:
        yield served


@pytest.fixture
def served_batched(pg_url: str, template_db: str, tmp_path: Path) -> Iterator[Served]:
    """A server of one test that writes its searches' accesses once a minute."""
    with _serving(pg_url, template_db, tmp_path, 60) as served:
        yield served
