"""The archivist command starts fast and says which version it is."""

from __future__ import annotations

from importlib.metadata import version

from click.testing import CliRunner

from deployments.cli import main


def test_version_prints_the_installed_package_version() -> None:
    result = CliRunner().invoke(main, ["--version"])

    assert result.exit_code == 0, result.output
    assert result.output == f"archivist {version('archivist')}\n"
