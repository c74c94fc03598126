"""A search's lookups by id (the hits it records, priming's episodes by session) take the
namespace as a filter: planned generically under the search's settings (bitmap scans
only), a namespace index condition ANDed the namespace's whole btree into each lookup,
more the larger the namespace."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, TextClause

from storage.retrieval.candidates import RECORD_ACCESS
from storage.server.engine import Store
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]


def generic_plan(conn: Connection, statement: TextClause, values: dict[str, str]) -> list[dict]:
    """The nodes of ``statement``'s generic plan run under a search's settings, its
    parameters given as SQL literals (by name)."""
    names = list(dict.fromkeys(re.findall(r"(?<!:):(\w+)", statement.text)))
    body = re.sub(r"(?<!:):(\w+)", lambda m: f"${names.index(m.group(1)) + 1}", statement.text)
    conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
    conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
    conn.exec_driver_sql("PREPARE probe AS " + body)
    args = ", ".join(values[name] for name in names)
    found = conn.exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE probe({args})")
    doc = found.scalar_one()
    return _nodes((json.loads(doc) if isinstance(doc, str) else doc)[0]["Plan"])


def test_recording_a_search_finds_its_hits_by_id_alone(store: Store) -> None:
    for n in range(200):  # many namespaces: one namespace's btree range looks narrow
        put(store, f"ns{n:03}", [f"note {i} of namespace {n}" for i in range(3)], AT)
    ids = put(store, "big", [f"big note number {i}" for i in range(2000)], AT)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE memories")
    hits = "'{" + ",".join(str(i) for i in ids[:10]) + "}'"
    with store.engine.begin() as conn:
        nodes = generic_plan(
            conn,
            RECORD_ACCESS,
            {"namespace": "'big'", "context": "'q'", "at": "now()", "ids": hits},
        )
        conn.rollback()
    scans = [n["Index Name"] for n in nodes if "Index Name" in n]
    read = sum(round(n["Actual Rows"]) for n in nodes if n["Node Type"] == "Bitmap Index Scan")
    assert scans and all("namespace" not in name for name in scans), scans
    assert read <= 10
