"""A real Python child process that stops at a point and waits on stdin: to be killed with
SIGKILL there (as a crash leaves things) or told to go on and finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Self

ROOT = Path(__file__).resolve().parents[1]


class PausedChild:
    """``python -c script *args``; the script prints a line when it reaches its pause."""

    def __init__(self, script: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            text=True,
        )
        assert self.process.stdout is not None
        self.first_line = self.process.stdout.readline()

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """``kill -9``, and reap it (a zombie would still look alive)."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def finish(self) -> None:
        """Let it go on from its pause and exit."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout=30) == 0

    def __enter__(self) -> Self:
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
