"""What the pytest-xdist workers of one run share: the run's temp folder (the parent of each
worker's own, which pytest-xdist names ``<run's>/<worker>``) and file locks in it.

Outside pytest-xdist there is no one to share with: ``folder`` is None.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def folder(config: pytest.Config) -> Path | None:
    """The run's temp folder, seen by all its workers; None outside a pytest-xdist worker."""
    basetemp = config.option.basetemp  # set on every worker by pytest-xdist
    if "PYTEST_XDIST_WORKER" not in os.environ or not basetemp:
        return None
    return Path(basetemp).parent


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held by one process of the run at a time (``path`` is made if missing)."""
    with path.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)
