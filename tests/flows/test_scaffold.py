"""Every flow goes through the one scaffold (``flows.common.flow_run``): none builds its own
settings, resolves its own ``as_of``, opens the store or records its run by itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FLOWS = Path(__file__).resolve().parents[2] / "flows"
SETUP = {"Settings", "resolve_as_of", "connect_task", "open_store_task", "start_run", "finish_run"}


def _flows() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for path in sorted(FLOWS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", "") == "flow"
                for d in node.decorator_list
            ):
                found.append((path.name, node))
    return found


def _called(node: ast.AST) -> set[str]:
    return {
        call.func.id
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    }


def test_every_flow_is_found() -> None:
    assert len(_flows()) == 9  # sync, summaries, drain, tidy, aging, quality, watchdog, ...


@pytest.mark.parametrize(("module", "flow"), _flows(), ids=lambda x: getattr(x, "name", x))
def test_a_flow_sets_itself_up_only_through_the_scaffold(module: str, flow: ast.FunctionDef):
    scaffolded = any(
        isinstance(item.context_expr, ast.Call)
        and getattr(item.context_expr.func, "id", "") == "flow_run"
        for node in ast.walk(flow)
        if isinstance(node, ast.With)
        for item in node.items
    )
    assert scaffolded, f"{module}: {flow.name} does not run inside `with flow_run(...)`"
    assert _called(flow) & SETUP == set(), f"{module}: {flow.name} repeats the run's setup"
