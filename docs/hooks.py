"""MkDocs hooks: the reference pages are generated from the code at build time.

A page asks for a generated part with a marker line, ``<!-- generated: NAME -->``:
``configuration`` (``Settings`` and its sections: each field's variable, type, default and
description), ``cli`` (the ``archivist`` command, walked through click), ``http-api`` (the
FastAPI app's OpenAPI schema), ``schedules`` (``deployments.schedule``) and ``modules``
(the source tree, each module with its docstring's first sentence). The schema is
also published as ``reference/openapi.json``.

Every page is checked as well: an ``ARCHIVIST_*`` variable that no setting reads, an
``archivist`` command that does not exist, or a setting without a description is logged as
a warning, which fails ``mkdocs build --strict``. Nothing here reaches the network.
"""

from __future__ import annotations

import json
import logging
import re

from gen_reference import checks, cli, configuration, http_api, modules, schedules
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.archivist")

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
GENERATORS = {
    "configuration": configuration.markdown,
    "cli": cli.markdown,
    "http-api": http_api.markdown,
    "schedules": schedules.markdown,
    "modules": modules.markdown,
}
# The pages that must hold a marker: a reference page that lost it would go stale quietly.
REQUIRED = {
    "reference/configuration.md": "configuration",
    "reference/cli.md": "cli",
    "reference/http-api.md": "http-api",
}
OPENAPI_FILE = "reference/openapi.json"


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Refuse to build a site whose settings lack descriptions (a warning: --strict fails)."""
    for problem in configuration.problems():
        log.warning(problem)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Publish the HTTP API's OpenAPI schema beside its reference page."""
    schema = json.dumps(http_api.schema(), indent=2, sort_keys=False) + "\n"
    files.append(File.generated(config, OPENAPI_FILE, content=schema))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Check the page's variables and commands, then put the generated parts in."""
    where = page.file.src_uri
    for problem in checks.problems(markdown):
        log.warning(f"{where}: {problem}")
    wanted = REQUIRED.get(where)
    if wanted is not None and f"<!-- generated: {wanted} -->" not in markdown:
        log.warning(f"{where}: the marker <!-- generated: {wanted} --> is missing")
    return MARKER.sub(lambda found: _generated(found.group(1), where), markdown)


def _generated(name: str, where: str) -> str:
    generate = GENERATORS.get(name)
    if generate is None:
        raise PluginError(f"{where}: no generator named {name!r} (known: {sorted(GENERATORS)})")
    return generate()
