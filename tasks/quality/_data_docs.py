"""A static ``index.html`` for the Great Expectations Data Docs site, readable offline.

GX's own index draws its two lists (validation results, expectation suites) with
bootstrap-table, loaded from CDNs: without a network it shows an empty page. The pages it
links hold their content in plain HTML and read well enough unstyled. After every build
the index is replaced by this one: both lists as plain tables with relative links, the
style inline, no script.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from tasks.quality._html import escape, page_html, replace_file

MAX_RESULTS = 500  # newest first; older pages stay on disk, unlisted
_STATUS = re.compile(r"Status:</span>.{0,200}?(Succeeded|Failed)", re.DOTALL)
_RUN_TIME = re.compile(r"^\d{8}T\d{6}(\.\d+)?Z$")


def write_static_index(docs_dir: Path) -> None:
    """Replace the site's index with a static one listing its results and suites."""
    results = sorted(_results(docs_dir), reverse=True)[:MAX_RESULTS]
    suites = sorted(
        (p.relative_to(docs_dir / "expectations").with_suffix(""), p.relative_to(docs_dir))
        for p in (docs_dir / "expectations").glob("**/*.html")
    )
    rows = "".join(
        f"<tr><td>{escape(f'{when:%Y-%m-%d %H:%M:%S} UTC')}</td><td>{escape(suite)}</td>"
        f'<td class="{"ok" if status == "Succeeded" else "bad"}">{escape(status)}</td>'
        f'<td><a href="{escape(link.as_posix())}">result</a></td></tr>'
        for when, suite, status, link in results
    )
    listed = "".join(
        f'<li><a href="{escape(link.as_posix())}">{escape(".".join(name.parts))}</a></li>'
        for name, link in suites
    )
    body = (
        "<h1>Data Docs</h1><p><small>Great Expectations' pages, listed without the scripts "
        "its own index loads from the network; they read unstyled offline.</small></p>"
        "<h2>Validation results, newest first</h2><table><tr><th>run</th><th>suite</th>"
        f"<th>status</th><th></th></tr>{rows}</table>"
        f"<h2>Expectation suites</h2><ul>{listed}</ul>"
    )
    replace_file(docs_dir / "index.html", page_html("Data Docs", body))


def _results(docs_dir: Path) -> list[tuple[datetime, str, str, Path]]:
    """(run time, suite, status, link) of every validation result page of the site."""
    found = []
    for page in (docs_dir / "validations").glob("**/*.html"):
        parts = page.relative_to(docs_dir / "validations").parts
        stamp = next((p for p in reversed(parts) if _RUN_TIME.match(p)), None)
        if stamp is None or len(parts) < 4:
            continue  # not a result page in GX's layout
        when = datetime.strptime(stamp.split(".")[0], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
        status = _STATUS.search(page.read_text(encoding="utf-8", errors="replace"))
        suite = ".".join(parts[: parts.index(stamp) - 1])
        link = page.relative_to(docs_dir)
        found.append((when, suite, status[1] if status else "unknown", link))
    return found
