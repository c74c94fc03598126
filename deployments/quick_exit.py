"""One-shot reading commands: no garbage collection while they run, no teardown at the end;
the other commands: a lighter collector.

``archivist search`` imports SQLAlchemy, psycopg, numpy, pydantic and ONNX Runtime, asks
one question and exits. Two costs come on top of that work, measured on its process
(bench/cli.py): the cyclic garbage collector, which the imports' allocations set off again
and again while they run (0.05 to 0.1 s of CPU), and the interpreter's teardown
after the answer, module by module and object by object (about 0.2 s of CPU, and 0.5 to
0.8 s of wall time on this project's loaded 2-core machine). In the ``archivist``
script, the collector is off from the start. ``arm`` turns it back on, lightly
(`collect_lightly`), unless the command is one of ``QUICK``; for those the process ends
right after the atexit hooks (the embedded server's holder list, the model loader's join,
logging) with ``os._exit``: the exit code the command set, output flushed. Nothing written
is lost: files are closed by ``with`` blocks, connections by the kernel (PostgreSQL logs an
idle client's end at DEBUG1 only).

``hook`` is registered when this module is imported, which ``deployments.cli`` does
before its other imports, so that it runs after every hook the command registers (atexit
runs them last in, first out). It does nothing unless ``arm`` armed it and ``note_exit``
was given the code. Under click's test runner, or with ``standalone_mode=False``, the
process is not the script, and nothing here changes anything.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sys
from pathlib import Path

QUICK = frozenset({"search", "prime", "status"})
_state: dict[str, object] = {}


def _is_script() -> bool:
    return Path(sys.argv[0]).name == "archivist"


def arm(command: str | None) -> None:
    """In the ``archivist`` script: keep the collector off and skip the teardown at exit if
    ``command`` is a quick one; else turn the collector back on (`collect_lightly`)."""
    if not _is_script():
        return  # the collector was never turned off
    if command in QUICK:
        _state["armed"] = True
    else:
        collect_lightly()


def collect_lightly() -> None:
    """Turn the collector on for a command that runs on: what is loaded by now is frozen,
    and the whole heap is collected after every 100 collections of the middle generation
    instead of 10 (Python's other condition, a quarter more long-lived objects since the
    last full collection, still holds).

    A command goes on to import what it serves or runs (the MCP server, Prefect, the
    flows), and each full collection meanwhile walks every object loaded so far. Whole
    processes on the demo's store, CPU with the collector simply turned on -> so (four runs
    each, in turns): `keys list` 0.81 -> 0.54 s, `queue stats` 0.90 -> 0.62, `worker --once`
    0.90 -> 0.64, `mcp` until its input ends 1.62 -> 1.23, `sync --dry-run` 2.51 -> 2.01.
    Frozen objects (the modules loaded so far, for the process's life anyway) are never
    collected, nor torn down at exit; what the command loads and makes later is, as
    before."""
    gc.freeze()
    generation0, generation1, _ = gc.get_threshold()
    gc.set_threshold(generation0, generation1, 100)
    gc.enable()


def note_exit(code: object) -> None:
    """The code ``sys.exit`` was called with (click's, at the end of every command)."""
    _state["code"] = code


def hook() -> None:
    """The last atexit hook: flush, then end the process with the noted code."""
    if not _state.get("armed") or "code" not in _state:
        return  # an exit of another kind: the interpreter's usual teardown
    code = _state["code"]
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # as the interpreter does with sys.exit("text")
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that left, a closed stream
            pass
    os._exit(code or 0)


if _is_script():
    gc.disable()  # until `arm` knows the command
atexit.register(hook)  # on import, by deployments.cli before its other imports: it runs last
