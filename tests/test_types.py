"""mypy over the whole tree (``[tool.mypy]`` in ``pyproject.toml``: strict, every package,
the benchmarks, the tests and the docs' hooks), run as a test.

The second command used to run mypy on its own before pytest: on a fresh clone a cold check
took about 30 s of the command's five minutes on two cores, while the test processes, which
spend much of their time waiting on their servers, left part of the cores idle. As a test
it runs beside them (``LONGEST_FIRST`` in ``tests/conftest.py`` hands it out early), and a
type error fails the run as before, with mypy's report as the failure's message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_no_type_errors() -> None:
    mypy = Path(sys.executable).with_name("mypy")
    found = subprocess.run(
        [str(mypy)], cwd=ROOT, capture_output=True, text=True, check=False, timeout=1800
    )
    assert found.returncode == 0, found.stdout + found.stderr
    assert found.stdout.startswith("Success: no issues found"), found.stdout
