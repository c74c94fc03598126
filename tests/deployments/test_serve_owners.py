"""``archivist serve`` and ``prefect deploy --all`` never take over each other's deployments
(same eight names): each refuses in one line, ``serve --replace`` takes over deliberately,
``serve --remove`` hands the names back. Real processes on the session's Prefect server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from prefect.client.schemas.responses import DeploymentResponse
from prefect.settings import PREFECT_API_URL

from storage.kernel.settings import Settings
from tests.deployments.test_prefect_deploy import create_pool, prefect_deploy_all
from tests.deployments.test_serve_shutdown import NAMES, delete_ours, ours, wait_for

ARCHIVIST = str(Path(sys.executable).parent / "archivist")
REPO = Path(__file__).resolve().parents[2]


def deploy_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_")}
    return env | {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "DO_NOT_TRACK": "1"}


def prefect_deploy(workdir: Path) -> subprocess.CompletedProcess[str]:
    """``prefect deploy --all`` of the repo's prefect.yaml, as a user runs it, whatever it says."""
    workdir.mkdir()
    (workdir / "prefect.yaml").write_text((REPO / "prefect.yaml").read_text())
    (workdir / "flows").symlink_to(REPO / "flows")
    return subprocess.run(
        [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all"],
        cwd=workdir,
        env=deploy_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def kept(found: list[DeploymentResponse]) -> list[tuple[object, ...]]:
    """What taking a deployment over would change."""
    return sorted((d.name, d.id, d.work_pool_name, d.paused, str(d.pull_steps)) for d in found)


def test_serve_and_deploy_never_take_over_each_others_deployments(
    flow_env: Settings, tmp_path: Path
) -> None:
    env = os.environ | {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "ARCHIVIST_EMBEDDING__PROVIDER": "hashing",
    }
    asyncio.run(delete_ours())
    asyncio.run(create_pool())
    (tmp_path / "first").mkdir()
    prefect_deploy_all(tmp_path / "first", deploy_env())
    deployed = asyncio.run(ours())
    try:
        refused = subprocess.run(
            [ARCHIVIST, "serve"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert refused.returncode == 1
        assert refused.stderr.splitlines()[-1].startswith(
            "Error: `prefect deploy` made deployments with these names (memory-aging and 7 "
            "more, work pool archivist-process) and its workers run them; serving would take "
            "them over. Run `prefect worker start --pool archivist-process` instead, or "
            "`archivist serve --replace`"
        )
        assert "Traceback" not in refused.stderr
        assert kept(asyncio.run(ours())) == kept(deployed)  # untouched: paths, pool, not paused

        log = tmp_path / "serve.log"
        with log.open("wb") as sink:
            serve = subprocess.Popen(
                [ARCHIVIST, "serve", "--replace"],
                env=env,
                cwd=REPO,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for(
                lambda: (
                    sorted(d.name for d in asyncio.run(ours()) if not d.work_pool_name)
                    == sorted(NAMES)
                )
            )
            # and serve handles SIGTERM (the deployments exist before its handler does)
            wait_for(lambda: "SIGTERM or Ctrl-C stops" in log.read_text(errors="replace"))
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(timeout=120) == 0, log.read_text()[-3000:]
        finally:
            if serve.poll() is None:
                serve.kill()
        assert "deleted 8 deployments of `prefect deploy`" in log.read_text()
        served = asyncio.run(ours())

        again = prefect_deploy(tmp_path / "second")
        assert again.returncode != 0
        said = " ".join((again.stdout + again.stderr).split())
        assert "`archivist serve` made deployments with these names (memory-aging and 7 more)" in (
            said
        )
        assert "run `archivist serve --remove`" in said
        assert kept(asyncio.run(ours())) == kept(served)  # serve's, paused, still its own

        removed = subprocess.run(
            [ARCHIVIST, "serve", "--remove"], env=env, capture_output=True, text=True, timeout=300
        )
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.startswith("removed 8 deployments of `archivist serve`")
        assert asyncio.run(ours()) == []
    finally:
        asyncio.run(delete_ours())
