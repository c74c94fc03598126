"""Configuration mistakes a user makes, said plainly: a bad value, a misspelled variable.

``describe`` turns pydantic's validation dump into one line per problem, named by the
environment variable that sets it. ``unknown_variables`` finds ``ARCHIVIST_*`` variables
that set nothing (pydantic-settings ignores them silently) and names the closest real one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping

from pydantic import BaseModel, ValidationError

from storage.kernel.settings import Settings

PREFIX = "ARCHIVIST_"
# Read by Settings itself, not a field of it.
EXTRA = frozenset({"ARCHIVIST_POLICY_FILE"})


def variable(loc: tuple[int | str, ...]) -> str:
    """The variable behind a field path: ``embedding.dim`` is ARCHIVIST_EMBEDDING__DIM."""
    return PREFIX + "__".join(str(part).upper() for part in loc)


def describe(exc: ValidationError) -> str:
    """One line per problem: ``VARIABLE: message``, without pydantic's links and types."""
    lines = []
    for error in exc.errors():
        name = variable(error["loc"]) if error["loc"] else "configuration"
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"{name}: {message}")
    return "\n".join(lines)


def _fields(model: type[BaseModel], path: tuple[str, ...]) -> Iterator[tuple[str, bool]]:
    """(variable, takes nested keys) for every field, nested models flattened."""
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from _fields(kind, (*path, name))
        else:
            yield variable((*path, name)), "dict" in str(kind)


def known_variables() -> dict[str, bool]:
    return dict(_fields(Settings, ())) | dict.fromkeys(EXTRA, False)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """A warning for each ``ARCHIVIST_*`` variable that sets nothing, with the closest name."""
    known = known_variables()
    nested = [name + "__" for name, takes_keys in known.items() if takes_keys]
    stems = [name.removeprefix(PREFIX) for name in known]
    warnings = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in known or upper.startswith(tuple(nested)):
            continue
        close = difflib.get_close_matches(upper.removeprefix(PREFIX), stems, n=1, cutoff=0.75)
        hint = f"; did you mean {PREFIX}{close[0]}?" if close else ""
        warnings.append(f"{name} is not an Archivist setting and is ignored{hint}")
    return warnings
