"""Run the quality suites: Great Expectations over the store, plain checks over the files.

GX is imported only inside these functions (3-5 s), so importing the flow stays cheap. The
context is ephemeral; its Data Docs site (``QualitySettings.site_name``) is written to
``<reports_dir>/data_docs``; its ``index.html``, which GX draws with scripts from CDNs, is
replaced by a static one (``_data_docs``). Data Docs need a network for their styles, so
each run also writes a self-contained page (``_html``). The store's URL
goes to ``add_sql``: ``add_postgres`` rejects the embedded server's unix-socket URL.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.kernel.settings import QualitySettings, TidySettings
from storage.pseudonyms import Pseudonyms, pseudonyms
from storage.server.engine import Store
from tasks.files import MemoryRoot
from tasks.quality._data_docs import write_static_index
from tasks.quality._html import write_html_report
from tasks.quality._suites import AssetSpec, all_assets
from tasks.quality._types import CheckOutcome, QualityReport

DATA_DOCS = "data_docs"
TABLE_EXISTS = text("SELECT to_regclass(:name) IS NOT NULL")


def present_assets(
    engine: Engine, assets: Sequence[AssetSpec]
) -> tuple[list[AssetSpec], list[str]]:
    """The assets whose tables exist, and why the others are skipped."""
    kept: list[AssetSpec] = []
    skipped: list[str] = []
    with engine.connect() as conn:
        for asset in assets:
            table = asset.requires_table
            if table is None or conn.execute(TABLE_EXISTS, {"name": table}).scalar():
                kept.append(asset)
            elif f"{asset.suite}: table {table} absent" not in skipped:
                skipped.append(f"{asset.suite}: table {table} absent")
    return kept, skipped


def _context(docs_dir: Path, site_name: str) -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    context.add_data_docs_site(
        site_name,
        {
            "class_name": "SiteBuilder",
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(docs_dir),
            },
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        },
    )
    return context


def _sql_source(context: Any, url: str) -> Any:
    with warnings.catch_warnings():
        # add_postgres refuses unix-socket URLs, so the generic source is deliberate.
        warnings.filterwarnings("ignore", message="You are using a generic SQLDatasource")
        return context.data_sources.add_sql(name="archivist", connection_string=url)


def _validation(context: Any, source: Any, asset: AssetSpec) -> Any:
    import great_expectations as gx
    import great_expectations.expectations as gxe

    batch = source.add_query_asset(name=asset.gx_suite, query=asset.query)
    suite = context.suites.add(gx.ExpectationSuite(name=asset.gx_suite))
    for order, spec in enumerate(asset.expectations):
        meta = {"suite": asset.suite, "check": spec.check, "critical": spec.critical}
        severity = "critical" if spec.critical else "warning"
        expectation_class = getattr(gxe, spec.gx_class)
        suite.add_expectation(
            expectation_class(**spec.kwargs, severity=severity, meta=meta | {"order": order})
        )
    definition = gx.ValidationDefinition(
        name=asset.gx_suite, data=batch.add_batch_definition_whole_table("all"), suite=suite
    )
    return context.validation_definitions.add(definition)


def _error_message(info: Any) -> str | None:
    """The exception GX caught while evaluating an expectation, if any."""
    if not isinstance(info, dict):
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message"))
    nested = [v for v in info.values() if isinstance(v, dict) and v.get("raised_exception")]
    return str(nested[0].get("exception_message")) if nested else None


def _examples(result: dict[str, Any], limit: int) -> tuple[str, ...]:
    indexed = result.get("partial_unexpected_index_list") or []
    if indexed:
        return tuple(f"id {row.get('id')}" for row in indexed[:limit] if isinstance(row, dict))
    return tuple(repr(v) for v in (result.get("partial_unexpected_list") or [])[:limit])


def _observed(*, success: bool, result: dict[str, Any], error: str | None) -> str:
    if error is not None:
        return f"error: {error}"
    if "unexpected_count" in result:
        total = result.get("element_count")
        if total == 0:
            return "no rows to check"
        return f"{result['unexpected_count'] or 0} of {total} rows unexpected"
    if "observed_value" in result:
        return f"observed {result['observed_value']}"
    return "ok" if success else "failed"


def outcome_of(validation_result: Any, examples: int) -> CheckOutcome:
    """Our record of one GX expectation result."""
    config = validation_result.expectation_config
    result: dict[str, Any] = dict(validation_result.result or {})
    error = _error_message(validation_result.exception_info)
    success = bool(validation_result.success) and error is None
    unexpected = result.get("unexpected_count")
    if unexpected is None and config.type == "expect_table_row_count_to_equal":
        unexpected = result.get("observed_value")
    return CheckOutcome(
        suite=str(config.meta["suite"]),
        check=str(config.meta["check"]),
        expectation=str(config.type),
        critical=bool(config.meta["critical"]),
        success=success,
        observed=_observed(success=success, result=result, error=error),
        unexpected_count=None if unexpected is None else int(unexpected),
        examples=() if success else _examples(result, examples),
    )


def validate_store(
    url: str, assets: Sequence[AssetSpec], quality: QualitySettings, docs_dir: Path
) -> tuple[list[CheckOutcome], str]:
    """Validate every asset in one checkpoint, build the Data Docs; returns results and URI."""
    import great_expectations as gx

    context = _context(docs_dir, quality.site_name)
    source = _sql_source(context, url)
    try:
        checkpoint = gx.Checkpoint(
            name="memory-quality-report",
            validation_definitions=[_validation(context, source, a) for a in assets],
            result_format={"result_format": "SUMMARY", "unexpected_index_column_names": ["id"]},
        )
        result = context.checkpoints.add(checkpoint).run()
    finally:
        source.get_engine().dispose()
    # Once, after every validation: GX's UpdateDataDocsAction built a result's page, its
    # suite's page and the whole index after each validation, and each page compiles its
    # Jinja templates anew (two thirds of a run's CPU went to Data Docs).
    context.build_data_docs(site_names=[quality.site_name])
    outcomes = [
        outcome_of(r, quality.examples) for run in result.run_results.values() for r in run.results
    ]
    order = {(a.suite, e.check): i for i, a in enumerate(assets) for e in a.expectations}
    outcomes.sort(key=lambda o: order.get((o.suite, o.check), len(order)))
    site = context.get_docs_sites_urls(site_names=[quality.site_name])
    write_static_index(docs_dir)  # GX's own index is blank offline
    return outcomes, str(site[0]["site_url"])


def memory_file_sizes(root: MemoryRoot) -> list[tuple[str, int, int]]:
    """(path, lines, bytes) of every ``MEMORY.md`` under the memory root."""
    if not root.fs.exists(root.root):
        return []
    found: list[tuple[str, int, int]] = []
    for path in sorted(root.fs.find(root.root)):
        if path.rsplit("/", 1)[-1] == "MEMORY.md":
            data: bytes = root.fs.cat_file(path)
            found.append((path, len(data.decode("utf-8").splitlines()), len(data)))
    return found


def _cap_check(
    name: str, values: Sequence[tuple[str, int]], cap: int, examples: int
) -> CheckOutcome:
    over = [(path, value) for path, value in values if value > cap]
    return CheckOutcome(
        suite="memory_files",
        check=f"memory_md_{name}",
        expectation=f"file_{name}_at_most_{cap}",
        critical=False,
        success=not over,
        observed=f"{len(over)} of {len(values)} files over {cap}",
        unexpected_count=len(over),
        examples=tuple(f"{path} ({value})" for path, value in over[:examples]),
    )


def memory_namespaces(root: MemoryRoot) -> list[str]:
    """The namespaces that have a ``MEMORY.md``."""
    prefix = root.root.rstrip("/") + "/"
    return sorted({p.removeprefix(prefix).split("/", 1)[0] for p, _, _ in memory_file_sizes(root)})


def check_memory_files(
    root: MemoryRoot, caps: TidySettings, examples: int, names: Pseudonyms
) -> list[CheckOutcome]:
    """Each MEMORY.md within the tidy's caps; warnings, since the next tidy restores them.
    A file over a cap is named by its namespace's pseudonym (``names``)."""
    prefix = root.root.rstrip("/") + "/"
    sizes = [
        (names.path(path.removeprefix(prefix)), lines, size)
        for path, lines, size in memory_file_sizes(root)
    ]
    return [
        _cap_check("max_lines", [(p, lines) for p, lines, _ in sizes], caps.max_lines, examples),
        _cap_check("max_bytes", [(p, size) for p, _, size in sizes], caps.max_bytes, examples),
    ]


def run_quality(store: Store, root: MemoryRoot, as_of: datetime) -> QualityReport:
    """Every suite over the store and the memory files, with Data Docs under reports_dir."""
    settings = store.settings
    quality = settings.quality
    assets, skipped = present_assets(store.engine, all_assets(settings, as_of))
    url = store.engine.url.render_as_string(hide_password=False)
    checks, uri = validate_store(url, assets, quality, settings.reports_dir / DATA_DOCS)
    with Session(store.engine) as session, session.begin():
        names = pseudonyms(session, memory_namespaces(root))
    checks += check_memory_files(root, settings.tidy, quality.examples, names)
    report = QualityReport(
        as_of=as_of, checks=tuple(checks), data_docs_uri=uri, skipped=tuple(skipped)
    )
    page = write_html_report(report, settings.reports_dir)
    return replace(report, html_report=page.as_uri())
