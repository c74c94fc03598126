"""A real process that records a run through ``storage.runs`` and then waits, to be killed
with SIGKILL (as a crash leaves it) or to finish it."""

from __future__ import annotations

import uuid

from tests.child import PausedChild

START_THEN_WAIT = """
import sys
from datetime import UTC, datetime
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from storage import runs

engine = create_engine(sys.argv[1])
with Session(engine) as session, session.begin():
    run_id = runs.start_run(session, sys.argv[2], datetime.now(UTC), {}, sys.argv[3] or None)
print(run_id, flush=True)
if sys.stdin.readline():
    with Session(engine) as session, session.begin():
        runs.finish_run(session, run_id, "completed", {})
"""


class RunningFlow(PausedChild):
    """A child process with a ``running`` run of ``flow`` recorded by the real code (for
    the Prefect flow run ``flow_run_id``, if given)."""

    def __init__(self, database_url: str, flow: str, flow_run_id: str = "") -> None:
        super().__init__(START_THEN_WAIT, database_url, flow, flow_run_id)
        self.run_id = uuid.UUID(self.first_line.strip())
