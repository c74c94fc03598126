"""A real process caught in the middle of an atomic write, to kill with SIGKILL or let finish.

The child writes through ``tasks.files.atomic_write`` on a local filesystem that stops in
its rename (the one seam a test needs): the temporary file is written and flushed, its
rename not done, exactly where a ``kill -9`` leaves a hidden copy behind.
"""

from __future__ import annotations

from pathlib import Path

from tests.child import PausedChild

WRITE_THEN_WAIT = """
import sys
from fsspec.implementations.local import LocalFileSystem
from tasks.files import atomic_write

class StopsBeforeRename(LocalFileSystem):
    def mv(self, path1, path2, **kwargs):
        print("written", flush=True)
        if not sys.stdin.readline():
            raise SystemExit(1)
        super().mv(path1, path2, **kwargs)

atomic_write(StopsBeforeRename(), sys.argv[1], sys.argv[2].encode())
"""


class PausedWriter(PausedChild):
    """A child process that has written ``path``'s temporary file and waits to rename it."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        super().__init__(WRITE_THEN_WAIT, str(path), text)
        assert self.first_line == "written\n"


def temporaries(folder: Path) -> list[str]:
    """The hidden temporary files in a folder."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.suffix == ".tmp")
