"""A real process caught in the middle of an atomic write, to kill with SIGKILL or let finish.

The child writes through ``tasks.files.atomic_write`` on a local filesystem that stops in
its rename (the one seam a test needs): the temporary file is written and flushed, its
rename not done, exactly where a ``kill -9`` leaves a hidden copy behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

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
ROOT = Path(__file__).resolve().parents[3]


class PausedWriter:
    """A child process that has written ``path``'s temporary file and waits to rename it."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITE_THEN_WAIT, str(path), text],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "written\n"

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """``kill -9``, and reap it (a zombie would still look alive)."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def finish(self) -> None:
        """Let it rename and exit."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout=30) == 0

    def __enter__(self) -> PausedWriter:
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


def temporaries(folder: Path) -> list[str]:
    """The hidden temporary files in a folder."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.suffix == ".tmp")
