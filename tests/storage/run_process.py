"""A real process that records a run through ``storage.runs`` and then waits, to be killed
with SIGKILL (as a crash leaves it) or to finish it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from types import TracebackType

START_THEN_WAIT = """
import sys
from datetime import UTC, datetime
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from storage import runs

engine = create_engine(sys.argv[1])
with Session(engine) as session, session.begin():
    run_id = runs.start_run(session, sys.argv[2], datetime.now(UTC), {}, None)
print(run_id, flush=True)
if sys.stdin.readline():
    with Session(engine) as session, session.begin():
        runs.finish_run(session, run_id, "completed", {})
"""
ROOT = Path(__file__).resolve().parents[2]


class RunningFlow:
    """A child process with a ``running`` run of ``flow`` recorded by the real code."""

    def __init__(self, database_url: str, flow: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", START_THEN_WAIT, database_url, flow],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            text=True,
        )
        assert self.process.stdout is not None
        self.run_id = uuid.UUID(self.process.stdout.readline().strip())

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """``kill -9``, and reap it (a zombie would still look alive)."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def finish(self) -> None:
        """Let it record its end and exit."""
        assert self.process.stdin is not None
        self.process.stdin.write("done\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout=30) == 0

    def __enter__(self) -> RunningFlow:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.kill()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
