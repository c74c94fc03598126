"""The archivist command starts fast and says which version it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from deployments.cli import main
from storage.config import Settings
from storage.engine import open_store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_version_prints_the_installed_package_version() -> None:
    result = CliRunner().invoke(main, ["--version"])

    assert result.exit_code == 0, result.output
    assert result.output == f"archivist {version('archivist')}\n"


# Runs the command in a fresh interpreter, then names the heavy packages it loaded.
_PROBE = """
import json, sys
from deployments.cli import main
main(sys.argv[1:], standalone_mode=False)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""
_NOT_FOR_READING = {"prefect", "great_expectations", "flows", "tasks", "pandas", "pyarrow"}


def loaded_packages(args: list[str], env: Settings, home: Path) -> set[str]:
    """The top-level packages a real ``archivist ARGS`` process imported."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    child_env |= {"PREFECT_HOME": str(home), "ARCHIVIST_EMBEDDING__PROVIDER": "hashing"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env=child_env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [["search", "alice", "dentist"], ["prime", "alice", "hello"], ["status"]],
    ids=["search", "prime", "status"],
)
def test_reading_commands_import_no_pipeline(
    args: list[str], env: Settings, tmp_path: Path
) -> None:
    put(open_store(env), "alice", ["Dentist appointment moved to Tuesday 9am"], NOW)

    loaded = loaded_packages(args, env, tmp_path)

    assert "sqlalchemy" in loaded  # the probe saw the command's own imports
    assert loaded & _NOT_FOR_READING == set()
