"""The HTTP API reference, from the FastAPI app's OpenAPI schema (``serving.api``, built
without a store): every route with its parameters, body and answers, then every schema."""

from __future__ import annotations

import functools
import re
from typing import Any

from gen_reference.text import code, escape, paragraphs, prose, table
from serving.api import openapi_schema

Schema = dict[str, Any]
_METHODS = ("get", "post", "put", "patch", "delete")


@functools.cache
def schema() -> Schema:
    """The app's OpenAPI schema, built once per build."""
    return openapi_schema()


def markdown() -> str:
    """The routes, then the schemas they name."""
    api = schema()
    info = api["info"]
    parts = [f"OpenAPI {api['openapi']}, {escape(info['title'])} API version {info['version']}."]
    for path, item in api["paths"].items():
        for method in _METHODS:
            if method in item:
                parts.append(_route(method, path, item[method]))
    parts.append("## Schemas {#schemas}")
    for name, body in api["components"]["schemas"].items():
        parts.append(_schema(name, body))
    return "\n\n".join(parts) + "\n"


def anchor(method: str, path: str) -> str:
    """``post /v1/namespaces/{namespace}/search`` is ``post-v1-namespaces-namespace-search``."""
    return "-".join([method, *re.findall(r"[a-z0-9_]+", path.lower())]).replace("_", "-")


def _route(method: str, path: str, op: Schema) -> str:
    parts = [f"## `{method.upper()} {path}` {{#{anchor(method, path)}}}"]
    key = "needs a namespace key (`Authorization: Bearer ...`)" if op.get("security") else "no key"
    parts.append(f"{escape(op.get('summary', ''))}: {key}; tag {code(', '.join(op['tags']))}.")
    if op.get("description"):
        parts.append(paragraphs(op["description"]))
    params = [
        [code(p["name"]), p["in"], _type(p["schema"]), "yes" if p.get("required") else "no",
         prose(p.get("description") or p["schema"].get("description", "")) or " "]
        for p in op.get("parameters", [])
    ]  # fmt: skip
    if params:
        parts.append(table(["Parameter", "In", "Type", "Required", "Description"], params))
    body = op.get("requestBody")
    if body is not None:
        media = body["content"]["application/json"]["schema"]
        parts.append(f"Body (`application/json`): {_type(media)}.")
    answers = [[code(status), _answer(status, answer)] for status, answer in _answers(op)]
    parts.append(table(["Status", "Answer"], answers))
    return "\n\n".join(parts)


def _answer(status: str, answer: Schema) -> str:
    """An answer's description, and the schema of a success's JSON when it has one (an
    error's is the API's ``{"error": ...}``, not FastAPI's default the schema names)."""
    words = escape(answer["description"])
    media = answer.get("content", {}).get("application/json", {}).get("schema", {})
    if status.startswith("2") and "$ref" in media:
        words += f": {_type(media)}"
    return words


def _answers(op: Schema) -> list[tuple[str, Schema]]:
    return list(op["responses"].items())


def _schema(name: str, body: Schema) -> str:
    parts = [f"### `{name}` {{#schema-{name.lower()}}}"]
    if body.get("description"):
        parts.append(paragraphs(body["description"]))
    required = set(body.get("required", []))
    rows = [
        [code(field), _type(spec), "yes" if field in required else "no", _default(spec),
         prose(spec.get("description", "")) or " "]
        for field, spec in body.get("properties", {}).items()
    ]  # fmt: skip
    if rows:
        parts.append(table(["Field", "Type", "Required", "Default", "Description"], rows))
    if body.get("additionalProperties") is False:
        parts.append("Other fields are refused.")
    return "\n\n".join(parts)


def _type(spec: Schema) -> str:
    """A JSON schema as words: ``string, at most 100``, ``list of Hit``, ``integer or null``."""
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#schema-{name.lower()})"
    if "anyOf" in spec:
        return " or ".join(_type(option) for option in spec["anyOf"])
    if "enum" in spec:
        return "one of " + ", ".join(code(str(value)) for value in spec["enum"])
    kind = spec.get("type", "any")
    if kind == "array":
        words = f"list of {_type(spec.get('items', {}))}"
    else:
        words = kind if "format" not in spec else f"{kind} ({spec['format']})"
    return words + _limits(spec)


def _limits(spec: Schema) -> str:
    words = [
        f"{label} {code(str(spec[key]))}"
        for key, label in (
            ("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"),
            ("exclusiveMaximum", "<"), ("minLength", "at least"), ("maxLength", "at most"),
            ("maxItems", "at most"), ("pattern", "matching"),
        )
        if key in spec
    ]  # fmt: skip
    return ", " + ", ".join(words) if words else ""


def _default(spec: Schema) -> str:
    if "default" not in spec:
        return " "
    value = spec["default"]
    if value is None:
        return code("null")
    return code(str(value).lower() if isinstance(value, bool) else str(value))
