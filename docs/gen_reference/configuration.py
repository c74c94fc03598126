"""The configuration reference: every field of ``Settings`` and of its sections, with the
environment variable that sets it, its type, default and ``Field(description=...)``."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from gen_reference.text import code, escape, paragraphs, table
from storage.kernel.settings import Settings
from storage.kernel.settings.variables import variable

Path_ = tuple[str, ...]
_NAMES: dict[Any, str] = {
    int: "integer",
    float: "number",
    bool: "boolean",
    str: "text",
    Path: "path",
    SecretStr: "secret text",
    Any: "value",
}


def sections(model: type[BaseModel] = Settings, path: Path_ = ()) -> Iterator[Section]:
    """The model's own fields as one section, then each nested model's, depth first."""
    own = [(name, info) for name, info in model.model_fields.items() if not _nested(info)]
    yield Section(path, model, own)
    for name, info in model.model_fields.items():
        kind = _nested(info)
        if kind is not None:
            yield from sections(kind, (*path, name))


class Section:
    """The fields of one model, set by variables that share its prefix."""

    def __init__(self, path: Path_, model: type[BaseModel], fields: list[tuple[str, FieldInfo]]):
        self.path, self.model, self.fields = path, model, fields

    @property
    def title(self) -> str:
        return " ".join(self.path).replace("_", " ").capitalize() if self.path else "General"

    @property
    def prefix(self) -> str:
        return variable(self.path) + "__" if self.path else "ARCHIVIST_"


def problems() -> list[str]:
    """A line for each setting that has no description."""
    return [
        f"setting {variable((*section.path, name))} has no Field(description=...)"
        for section in sections()
        for name, info in section.fields
        if not (info.description or "").strip()
    ]


def markdown() -> str:
    """The reference: one section per model, one row per field."""
    parts = []
    for section in sections():
        anchor = "-".join(section.path) or "general"
        parts.append(f"### {section.title} {{#{anchor}}}")
        doc = section.model.__doc__ if section.path else None
        if doc:
            parts.append(paragraphs(doc))
        parts.append(f"Variables start with {code(section.prefix)}.")
        rows = [_row((*section.path, name), info) for name, info in section.fields]
        parts.append(table(["Variable", "Type", "Default", "What it does"], rows))
    return "\n\n".join(parts) + "\n"


def _row(path: Path_, info: FieldInfo) -> list[str]:
    name = variable(path)
    kind = _type(info.annotation) + _bounds(info)
    return [
        f'<code id="{name.lower()}">{name}</code>',
        kind,
        _default(info),
        escape(info.description or ""),
    ]


def _nested(info: FieldInfo) -> type[BaseModel] | None:
    kind = info.annotation
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _type(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(_type(a) for a in args if a is not type(None))
    if origin is Literal:
        return "one of " + ", ".join(code(str(a)) for a in args)
    if origin is list:
        return f"JSON list of {_type(args[0])}"
    if origin is dict:
        value = _type(args[1])
        return "JSON object" if value == "value" else f"JSON object of {value}"
    return _NAMES.get(annotation, escape(getattr(annotation, "__name__", str(annotation))))


def _bounds(info: FieldInfo) -> str:
    low = high = ""
    pattern = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = f"[{item.ge}"
        elif isinstance(item, annotated_types.Gt):
            low = f"({item.gt}"
        elif isinstance(item, annotated_types.Le):
            high = f"{item.le}]"
        elif isinstance(item, annotated_types.Lt):
            high = f"{item.lt})"
        else:
            pattern = getattr(item, "pattern", None) or pattern
    if low and high:
        return f" in {code(low + ', ' + high)}"
    if low:
        return f", {'≥' if low[0] == '[' else '>'} {low[1:]}"
    if high:
        return f", {'≤' if high[-1] == ']' else '<'} {high[:-1]}"
    return f", matching {code(pattern)}" if pattern else ""


def _default(info: FieldInfo) -> str:
    factory = info.default_factory
    if factory is not None:
        if factory in (list, dict) or getattr(factory, "__name__", "") == "<lambda>":
            return code(json.dumps(factory()))  # type: ignore[call-arg]
        return "computed: see what it does"
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, float) and value.is_integer():
        return code(str(int(value)))
    return code(str(value))
