"""A quality report as one self-contained HTML page, readable offline.

Great Expectations' Data Docs load their styles and scripts from CDNs and render unstyled
without a network. This page has its style inline and links nothing outside the reports
folder: ``<reports_dir>/quality/<as_of>.html`` per run, ``latest.html`` for the newest,
and ``index.html`` listing every run, newest first. Every value is escaped.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from tasks.quality._types import CheckOutcome, QualityReport

FOLDER = "quality"
_REPORT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{6}Z?\.html$")
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;padding:0 1rem;
color:#1d2330}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #dde1e8;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f8}td.n{text-align:right}
.ok{color:#1a7f37}.bad{color:#b42318;font-weight:600}.warn{color:#9a6700}
code{background:#f3f5f8;padding:0 .2rem}small{color:#5b6475}
"""


def write_html_report(report: QualityReport, reports_dir: Path) -> Path:
    """Write the run's page, ``latest.html`` and the index; returns the run's page."""
    folder = reports_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / f"{report.as_of.strftime('%Y-%m-%dT%H%M%S')}Z.html"
    body = render(report)
    for target in (page, folder / "latest.html"):
        replace_file(target, body)
    replace_file(folder / "index.html", render_index(folder))
    return page


def render(report: QualityReport) -> str:
    verdict = (
        '<span class="ok">passed</span>'
        if report.success
        else f'<span class="bad">failed: {report.critical_failures} critical</span>'
    )
    when = escape(report.as_of.strftime("%Y-%m-%d %H:%M %Z").strip())
    parts = [f"<h1>Memory quality as of {when}: {verdict}</h1>", _suites(report)]
    if report.failed:
        parts += ["<h2>Failed expectations</h2>", _checks(report.failed)]
    parts += ["<h2>Every expectation</h2>", _checks(report.checks)]
    if report.skipped:
        items = "".join(f"<li>{escape(reason)}</li>" for reason in report.skipped)
        parts += ["<h2>Not checked</h2>", f"<ul>{items}</ul>"]
    parts.append('<p><small><a href="index.html">every report</a></small></p>')
    return page_html(f"Memory quality {when}", "\n".join(parts))


def render_index(folder: Path) -> str:
    names = sorted((p.name for p in folder.iterdir() if _REPORT.match(p.name)), reverse=True)
    rows = "".join(
        f'<li><a href="{escape(n)}">{escape(n.removesuffix(".html"))}</a></li>' for n in names
    )
    return page_html("Memory quality reports", f"<h1>Memory quality reports</h1><ul>{rows}</ul>")


def _suites(report: QualityReport) -> str:
    rows = "".join(
        f"<tr><td>{escape(suite)}</td><td class=n>{c['evaluated']}</td>"
        f"<td class=n>{c['failed']}</td><td class=n>{c['critical']}</td></tr>"
        for suite, c in report.suite_results().items()
    )
    head = "<tr><th>suite</th><th>evaluated</th><th>failed</th><th>critical failed</th></tr>"
    return f"<table>{head}{rows}</table>"


def _checks(checks: tuple[CheckOutcome, ...]) -> str:
    head = "<tr><th>check</th><th>result</th><th>observed</th><th>examples</th></tr>"
    rows = []
    for c in checks:
        if c.success:
            result = '<span class="ok">ok</span>'
        else:
            result = f'<span class="{"bad" if c.critical else "warn"}">' + (
                "critical</span>" if c.critical else "warning</span>"
            )
        rows.append(
            f"<tr><td>{escape(c.suite)}.{escape(c.check)}<br><small><code>{escape(c.expectation)}"
            f"</code></small></td><td>{result}</td><td>{escape(c.observed)}</td>"
            f"<td>{'<br>'.join(escape(x) for x in c.examples)}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


def page_html(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{STYLE}</style></head><body>{body}</body></html>\n"
    )


def escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def replace_file(path: Path, text: str) -> None:
    """Readers see the old page or the new one, never half of it."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
