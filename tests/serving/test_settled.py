"""A server process's start is kept out of the cyclic garbage collector's reach."""

from __future__ import annotations

import gc
import weakref

from fastapi import FastAPI

from serving.api import settled


def test_a_server_process_freezes_what_its_start_made_and_collects_its_garbage_first() -> None:
    class Cycle:
        pass

    garbage = Cycle()
    garbage.self = garbage  # type: ignore[attr-defined]
    gone = weakref.ref(garbage)
    del garbage
    app = FastAPI()
    try:
        assert settled(app) is app
        assert gc.get_freeze_count() > 0
        tracked = gc.get_objects()
        assert not any(o is app for o in tracked)  # frozen: no collection walks it
        assert gone() is None  # collected before, not frozen with the rest
    finally:
        gc.unfreeze()
    assert any(o is app for o in gc.get_objects())
