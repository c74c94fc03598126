"""What the Prefect UI shows for each deployment: described parameters, types, user words.

The schemas are built the two ways deployments are built: ``archivist serve`` through
``Flow.to_deployment`` (``deployments.serve``), and ``prefect deploy`` through
``parameter_schema`` of the flow loaded from the entrypoint in ``prefect.yaml``.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from prefect import Flow
from prefect.flows import load_flow_from_entrypoint
from prefect.utilities.callables import parameter_schema

import flows
from deployments.schedule import DEPLOYMENTS
from deployments.serve import build_deployments
from storage.kernel.settings import Settings

REPO = Path(__file__).parents[2]


def all_flows() -> list[Flow[..., Any]]:
    """Every flow defined in ``flows/*.py``, deployed or not (memory-forget is not)."""
    found: dict[str, Flow[..., Any]] = {}
    for module in pkgutil.iter_modules(flows.__path__):
        loaded = importlib.import_module(f"flows.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, Flow):
                found[value.name] = value
    return list(found.values())


def serve_schemas(tmp_path: Path) -> dict[str, dict[str, Any]]:
    built = build_deployments(Settings(data_dir=tmp_path))
    return {d.name: d._parameter_openapi_schema.model_dump_for_openapi() for d in built}


def deploy_schemas() -> dict[str, dict[str, Any]]:
    """As ``prefect deploy`` does: load the entrypoint's file, then ``parameter_schema``."""
    schemas = {}
    for spec in DEPLOYMENTS:
        path, _, func = spec.entrypoint.partition(":")
        flow: Flow[..., Any] = load_flow_from_entrypoint(f"{REPO / path}:{func}")
        schemas[spec.name] = parameter_schema(flow).model_dump_for_openapi()
    return schemas


def shown_types(prop: dict[str, Any]) -> list[str]:
    """The types the UI can show for a property.

    The Parameters tab's Type column reads the property's own ``type``. The custom-run
    form renders an optional parameter (``anyOf`` of the type and null) as a choice
    between its options, each labelled with its title, format or type (``str``, ``int``,
    ``date-time``, ``None``). A JSON-schema top-level type cannot be added to such a
    property without either rejecting null or breaking that choice, so an optional
    parameter counts as typed when one of its non-null options has a type.
    """
    if "type" in prop:
        return [prop["type"]]
    options = prop.get("anyOf", []) + prop.get("allOf", [])
    return [o["type"] for o in options if o.get("type") not in (None, "null")]


def assert_described_and_typed(name: str, schema: dict[str, Any]) -> None:
    assert schema["properties"], f"{name} has no parameters"
    for key, prop in schema["properties"].items():
        assert prop.get("description", "").strip(), f"{name}.{key} has no description"
        assert shown_types(prop), f"{name}.{key} shows no type: {prop}"


def test_every_served_parameter_is_described_and_typed(tmp_path: Path) -> None:
    schemas = serve_schemas(tmp_path)
    assert sorted(schemas) == sorted(s.name for s in DEPLOYMENTS)
    for name, schema in schemas.items():
        assert_described_and_typed(name, schema)


def test_every_prefect_yaml_parameter_is_described_and_typed() -> None:
    for name, schema in deploy_schemas().items():
        assert_described_and_typed(name, schema)


@pytest.mark.parametrize("flow", all_flows(), ids=lambda f: f.name)
def test_every_flow_parameter_is_described_and_typed(flow: Flow[..., Any]) -> None:
    assert_described_and_typed(flow.name, parameter_schema(flow).model_dump_for_openapi())


def test_descriptions_speak_to_users() -> None:
    texts = [(f.name, f.description or "") for f in all_flows()]
    texts += [(f.name, f.fn.__doc__ or "") for f in all_flows()]
    texts += [(s.name, s.description) for s in DEPLOYMENTS]
    for name, text in texts:
        assert text.strip(), f"{name} has no description"
        assert "seed" not in f"{name} {text}".lower(), f"{name}: {text!r}"
