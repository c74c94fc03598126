"""The archivist command starts fast and says which version it is."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner
from prefect.settings import PREFECT_API_URL

from deployments.cli import main
from flows.daily_sync import memory_sync_daily
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_version_prints_the_installed_package_version() -> None:
    result = CliRunner().invoke(main, ["--version"])

    assert result.exit_code == 0, result.output
    assert result.output == f"archivist {version('archivist')}\n"


# Runs the command in a fresh interpreter, then names the modules it loaded.
_PROBE = """
import json, sys
from deployments.cli import main
main(sys.argv[1:], standalone_mode=False)
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
# The long commands' progress bars stay out of the reading commands. (rich itself is loaded
# anyway, by httpx's package face: it imports httpx's command-line client, rich.progress
# included, whenever rich is installed.)
_BARS = "deployments.progress"
_NOT_FOR_READING = {"prefect", "great_expectations", "flows", "tasks", "pandas", "pyarrow"}


def run_archivist(args: list[str], home: Path, **extra: str) -> tuple[str, set[str]]:
    """What a real ``archivist ARGS`` process printed, and the modules it imported; no
    PREFECT_* variable but ``extra``'s."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    child_env |= {"PREFECT_HOME": str(home), "ARCHIVIST_EMBEDDING__PROVIDER": "hashing"}
    child_env |= extra
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
    return done.stdout, set(json.loads(done.stderr.splitlines()[-1]))


def loaded_modules(args: list[str], env: Settings, home: Path) -> set[str]:
    """The modules a real ``archivist ARGS`` process imported."""
    return run_archivist(args, home)[1]


@pytest.mark.parametrize(
    "args",
    [["search", "alice", "dentist"], ["prime", "alice", "hello"], ["status"]],
    ids=["search", "prime", "status"],
)
def test_reading_commands_import_no_pipeline(
    args: list[str], env: Settings, tmp_path: Path
) -> None:
    put(open_store(env), "alice", ["Dentist appointment moved to Tuesday 9am"], NOW)

    modules = loaded_modules(args, env, tmp_path)
    loaded = {m.split(".")[0] for m in modules}

    assert "sqlalchemy" in loaded  # the probe saw the command's own imports
    assert loaded & _NOT_FOR_READING == set()
    assert {m for m in modules if m.startswith(_BARS)} == set()


def test_db_commands_import_no_pipeline(env: Settings, tmp_path: Path) -> None:
    # `archivist db upgrade/roles/stop` start often (scripts, the keeper's tests): the
    # pipeline's modules, Prefect among them, cost each start about 1.2 s of CPU.
    out, modules = run_archivist(["db", "upgrade"], tmp_path)
    loaded = {m.split(".")[0] for m in modules}

    assert out.startswith("schema already at revision")
    assert "alembic" in loaded  # the probe saw the command's own imports
    assert loaded & _NOT_FOR_READING == set()


@pytest.mark.parametrize(
    ("args", "said"),
    [(["worker", "--once"], "worker stopped: 0 completed"), (["queue", "stats"], "pending 0")],
    ids=["worker", "queue-stats"],
)
def test_queue_commands_import_no_prefect(
    args: list[str], said: str, env: Settings, tmp_path: Path
) -> None:
    # `archivist worker` and `archivist queue add/stats` work on the queue alone; only
    # `queue drain` runs the flow. Prefect cost each start about 0.9 s of CPU.
    out, modules = run_archivist(args, tmp_path)
    loaded = {m.split(".")[0] for m in modules}

    assert said in out
    assert "tasks.queue" in modules  # the probe saw the queue's own modules
    assert loaded & (_NOT_FOR_READING - {"tasks"}) == set()


def test_status_reads_the_active_profiles_url_and_probes_it_without_prefect(
    env: Settings, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/api"
    (tmp_path / "profiles.toml").write_text(
        f'active = "work"\n[profiles.default]\n[profiles.work]\nPREFECT_API_URL = "{url}"\n'
    )

    out, loaded = run_archivist(["status"], tmp_path)

    assert f"Prefect API: {url} (unreachable: ConnectionRefusedError" in out
    assert f"n/a (Prefect API at {url} unreachable" in out
    assert "prefect" not in loaded  # an API that does not answer is not asked for runs


def test_status_with_the_url_in_the_environment_lists_that_servers_runs_without_prefect(
    flow_env: Settings, tmp_path: Path
) -> None:
    url = str(PREFECT_API_URL.value())  # the session's real Prefect server
    memory_sync_daily(as_of=NOW)

    out, loaded = run_archivist(["status"], tmp_path, PREFECT_API_URL=url)

    assert f"Prefect API: {url} (reachable)" in out
    assert "memory-sync-daily" in out.split("== Runs")[0]  # listed from the API
    assert "prefect" not in {m.split(".")[0] for m in loaded}  # read without loading Prefect


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A graph cache of this module's own: the first command that embeds builds the graphs
    there (1.5-2 s of CPU), the next ones read them."""
    return tmp_path_factory.mktemp("graphs")


@pytest.mark.parametrize(
    "args",
    [["prime", "alice"], ["search", "Not A Namespace", "dentist"]],
    ids=["prime-without-message", "search-refused"],
)
def test_a_command_that_ends_before_the_local_model_loads_exits_cleanly(
    args: list[str], env: Settings, tmp_path: Path, graphs: Path
) -> None:
    # Both commands end without embedding anything, while the model may still be loading
    # in its thread: ONNX Runtime aborted such a process at exit (signal 6) when the
    # graph came from the cache and the thread was building its session.
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    child_env |= {
        "PREFECT_HOME": str(tmp_path),
        "ARCHIVIST_EMBEDDING__PROVIDER": "local",
        "ARCHIVIST_EMBEDDING__GRAPH_CACHE_DIR": str(graphs),
    }

    def archivist(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(Path(sys.executable).with_name("archivist")), *argv]
        return subprocess.run(
            command, env=child_env, capture_output=True, text=True, timeout=120, check=False
        )

    assert archivist("search", "alice", "dentist").returncode == 0  # the graphs now cached
    done = archivist(*args)

    assert "terminate called" not in done.stderr
    assert "Traceback" not in done.stderr
    if args[0] == "prime":
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 1, done.stderr
        assert "bad namespace 'Not A Namespace'" in done.stderr


def test_a_reader_that_leaves_early_gets_no_error_message(env: Settings, tmp_path: Path) -> None:
    put(open_store(env), "alice", ["Dentist appointment moved to Tuesday 9am"], NOW)
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head` after its lines: every write now fails with EPIPE
    try:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("archivist")), "search", "alice", "dentist"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)

    assert done.stderr == ""  # was "Error: cannot access: Broken pipe"
    assert done.returncode != 0
