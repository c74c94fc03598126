"""The tests' Prefect server process: ``python -m uvicorn`` on Prefect's app, as Prefect's
harness starts it, with Python's cyclic garbage collector run in a thread of its own instead
of in the event loop's thread. Started by path (``tests.prefect_server``), it imports
nothing of the checkout.

Why: the server keeps its SQLite database open on several connections, each driven by a
thread of its own (aiosqlite), while the event loop runs in the main thread. Python's
collector runs in whichever thread allocates when its thresholds are crossed, most often
the loop's. When it frees a SQLite cursor that ended in a reference cycle, the cursor
resets its statement, and that waits for its connection's mutex. If that connection's
thread is at that moment waiting for SQLite's write lock, it holds the mutex until the lock
comes or its busy timeout runs out, and the lock's holder is a transaction whose coroutine
needs the blocked loop to go on: the server stands still for the whole timeout (30 s, 60 s
before). Seen (``py-spy dump --native`` of a server during such a stall, 2026-11-29): the main
thread in ``gc_collect_main`` -> ``cursor_dealloc`` -> ``sqlite3_reset`` ->
``pthread_mutex_lock``, a connection thread in ``sqlite3_step`` -> SQLite's busy handler.
In a collector thread the same wait blocks only that thread (``sqlite3_reset`` runs without
the GIL): the loop goes on, the transaction commits, the waiting connection takes the lock,
and the collection ends.
"""

from __future__ import annotations

import gc
import sys
import threading
import time

# How often the collector thread collects the young generations (objects that became
# garbage in a cycle wait at most this long), and after how many of those the whole heap:
# a full collection walks the app's 280,000 objects (0.18 s of CPU), and Python's own rule
# (the heap grown by a quarter) seldom runs one in a server's few minutes of a test run.
YOUNG_SECONDS = 0.5
YOUNG_PER_FULL = 600  # five minutes


def collect_beside_the_loop() -> None:
    """Python's collections, on a clock, in the calling thread."""
    young = 0
    while True:
        time.sleep(YOUNG_SECONDS)
        young += 1
        if young == YOUNG_PER_FULL:
            gc.collect()
            young = 0
        else:
            gc.collect(1)


def main() -> None:
    from uvicorn.main import main as uvicorn

    gc.disable()  # the thread below collects instead, outside the event loop's thread
    threading.Thread(target=collect_beside_the_loop, name="collector", daemon=True).start()
    sys.exit(uvicorn())


if __name__ == "__main__":
    main()
