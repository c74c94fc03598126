"""The accesses of a serving process's searches, written in batches.

A search's hits count as accesses (access-log row, pending counts: ``storage.operations.
access``), which ranking reads. Written by each search in a statement of its own, they
cost about 0.5 ms of PostgreSQL's CPU and 0.3 of the server's per search; here a search
hands them over, and they are written together, about once every ``every`` seconds, by
one statement (``record_searches``) in a thread of their own.

What a crash can lose: the accesses handed over since the last batch was written, at
most ``every`` seconds' worth (1 by default: ``ARCHIVIST_SERVING__ACCESS_BATCH_SECONDS``)
and never more than ``most`` searches (past that a search writes the batch itself). A
normal stop (SIGTERM, Ctrl-C) writes them first (``close``). Memories never are at risk:
only the counts that ranking reads. A batch the store refuses (the store down) is kept
for the next one, within ``most`` searches; past that, the oldest are dropped, and the log
says how many.

Until ``start``, or with ``every`` 0, each search writes its own accesses as it hands them
over, through the same statement: what ``archivist mcp`` does, and a test that reads the
counts right after a search.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from storage.operations.access import SearchAccess, record_searches

log = logging.getLogger(__name__)

MOST = 10_000  # searches held at most: past that, the search that hands over writes them


class Accesses:
    """Searches' accesses waiting to be written, and the thread that writes them."""

    def __init__(self, engine: Engine, every: float, most: int = MOST) -> None:
        self.engine = engine
        self.every = every
        self.most = most
        self._waiting: list[SearchAccess] = []
        self._lock = threading.Lock()  # guards _waiting
        self._writing = threading.Lock()  # one batch at a time, in the order handed over
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0  # searches whose accesses were given up (the store refused them)

    def add(self, access: SearchAccess) -> None:
        """Hand one search's accesses over: written with the next batch, or now when no
        batches are written (``start``) or ``most`` searches wait."""
        with self._lock:
            self._waiting.append(access)
            full = len(self._waiting) >= self.most
        if self._thread is None or full:
            self.flush()

    def start(self) -> None:
        """Write batches every ``every`` seconds from now on (nothing with ``every`` 0)."""
        if self.every > 0 and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="archivist-accesses", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the thread and write what waits."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join()
        self.flush()

    def flush(self) -> int:
        """Write the waiting accesses now; the searches recorded."""
        with self._writing:
            with self._lock:
                batch, self._waiting = self._waiting, []
            if not batch:
                return 0
            try:
                with self.engine.begin() as conn:
                    return record_searches(conn, batch)
            except DBAPIError as exc:
                self._keep(batch, exc)
                return 0

    def _keep(self, batch: Sequence[SearchAccess], exc: DBAPIError) -> None:
        """Put a refused batch back before what came since, within ``most`` searches."""
        with self._lock:
            waiting = [*batch, *self._waiting]
            over = max(0, len(waiting) - self.most)
            self._waiting = waiting[over:]
            self.dropped += over
        log.warning(
            "recording %d searches' accesses failed (%s); kept for the next batch%s",
            len(batch),
            exc.orig,
            f", {over} oldest dropped" if over else "",
        )

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.flush()
            except Exception:  # the thread goes on: the next batch may be written
                log.exception("recording searches' accesses failed")
