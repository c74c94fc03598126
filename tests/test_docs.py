"""The documentation: every setting described, a short README whose second command is CI's,
and a site that builds strictly, offline, from references generated out of the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from serving.api import openapi_schema
from storage.kernel.settings import Settings
from storage.kernel.settings.variables import variable

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _undescribed(model: type[BaseModel], path: tuple[str, ...] = ()) -> list[str]:
    missing = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            missing += _undescribed(kind, (*path, name))
        elif not (info.description or "").strip():
            missing.append(variable((*path, name)))
    return missing


def test_every_setting_has_a_description() -> None:
    # The configuration reference is generated from these descriptions.
    assert _undescribed(Settings) == []


def test_a_setting_without_a_description_is_found() -> None:
    class Section(BaseModel):
        described: int = 1
        bare: int = 2

    class Outer(BaseModel):
        section: Section = Section()

    assert _undescribed(Outer) == ["ARCHIVIST_SECTION__DESCRIBED", "ARCHIVIST_SECTION__BARE"]


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_ci_runs_the_readmes_second_command_exactly() -> None:
    section = README.read_text(encoding="utf-8").split("## Two commands", 1)[1].split("\n## ")[0]
    commands = re.findall(r"```bash\n(.+?)\n```", section)
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == commands[1]
    # the whole suite, so the site's strict build (test_the_site_builds_strictly_…) runs too
    assert commands[1].endswith(" && .venv/bin/pytest -n auto --dist loadfile")
    assert commands[1] in (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")


def test_the_api_schema_is_built_without_a_store() -> None:
    paths = openapi_schema()["paths"]
    assert "/v1/namespaces/{namespace}/search" in paths
    assert "/v1/health" in paths


@pytest.fixture(scope="module")
def checks():  # the docs' own checker, loaded as MkDocs loads it (docs/ on the path)
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from gen_reference import checks

        yield checks
    finally:
        sys.path.remove(str(ROOT / "docs"))


def test_the_http_reference_names_what_search_answers(checks) -> None:
    from gen_reference import http_api

    page = http_api.markdown()
    route = page.split("## `POST /v1/namespaces/{namespace}/search`")[1].split("\n## ")[0]
    assert "Successful Response: [SearchAnswer](#schema-searchanswer)" in route
    assert "{#schema-searchhit}" in page and "{#schema-dochit}" in page


def test_a_page_naming_what_does_not_exist_is_reported(checks) -> None:
    page = (
        "Set `ARCHIVIST_SYNC__WINDOW` or `ARCHIVIST_QUEUE__*`, run `archivist serch alice`, "
        "`archivist db upgrade` and `archivist db upgrad`, read `storage/config.py` and "
        "`storage/kernel/inputs.py`."
    )
    assert checks.problems(page) == [
        "ARCHIVIST_SYNC__WINDOW is not a variable any setting reads",
        "`archivist db upgrad` is not a command",
        "`archivist serch` is not a command",
        "`storage/config.py` is not a file or folder of the repository",
    ]


def test_the_site_builds_strictly_and_loads_nothing_from_outside(tmp_path: Path) -> None:
    site = tmp_path / "site"
    mkdocs = Path(sys.executable).with_name("mkdocs")
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    outside = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""")
    pages = list(site.rglob("*.html"))
    assert len(pages) > 30
    assert [p.name for p in pages if outside.search(p.read_text(encoding="utf-8"))] == []
    reference = (site / "reference" / "configuration.html").read_text(encoding="utf-8")
    assert 'id="archivist_retrieval__max_limit"' in reference
    assert (site / "reference" / "openapi.json").exists()
